"""The golden releases: every file of the README's main job and of GPT-2 and Llama 3 releases, rebuilt and compared.

``scripts/golden_releases.py record`` builds them; the digests recorded before the
redesign (``tests/golden/before-redesign.json``) and after run_config format 2
(``run-config-v2.json``) are the bytes every change must keep, or change on purpose here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # four real builds, about 30 s


# run_config.json format 2 changed these files on purpose, and nothing else: the token
# files, .idx, receipts, manifests and stats.json of every golden release keep their bytes. The
# card and COMPLETE.json (which lists run_config.json) follow run_config.json; ``tokenizer train``
# now also writes tokenizer_config.json and generation_config.json's bos_token_id.
CHANGED_BY_RUN_CONFIG_2 = {"run_config.json", "README.md", "COMPLETE.json"}
CHANGED_BY_TOKENIZER_FILES = {"sample": {"tokenizer/generation_config.json", "tokenizer/tokenizer_config.json"}}
# A release ships its tokenizer: tokenizer/ is new in every release, and COMPLETE.json lists it.
SHIPPED_TOKENIZER_DIR = "tokenizer/"
# A release holds a Parquet preview for the Hub's viewer:
# preview/ is new, COMPLETE.json lists it, the card declares it.
PREVIEW_DIR = "preview/"
# The card's charts (pictures/*.svg) are new in every release with Megatron pairs; the preview holds one row per
# document, each format's ids as columns. COMPLETE.json lists both, the card links the charts.
PICTURES_DIR = "pictures/"
# --llmc-layout llama3 writes llm.c's own Llama 3 data by default: <|begin_of_text|> (128000) before each
# document and no 128001 in its llm.c files and manifest (doc_sep_id
# 128000); its Megatron pairs and receipts keep their bytes.
CHANGED_BY_LLAMA3_BEGIN_OF_TEXT = {
    "llama3-upstream": {
        f"tokens/llama3/tinystories/{name}" for name in ("_MANIFEST.json", "train-00000.bin", "val-00000.bin")
    }
}
# run-config-v2.json was re-recorded when the card's llm.c example lines came to quote their globs (shell-quoted,
# the folder's glob characters escaped, as hf-tokbin recipe prints them): README.md and COMPLETE.json only.
# It was re-recorded again for the preview's one row per document and the card's charts: README.md, COMPLETE.json,
# preview/ and pictures/ only (every token file, .idx, receipt, manifest and stats.json kept its bytes).


def _differences(recorded: dict, now: dict, allowed=lambda tree, path: False) -> list[str]:
    return [
        f"{tree}/{path}: recorded {recorded.get(tree, {}).get(path, 'absent')[:12]}, "
        f"now {now.get(tree, {}).get(path, 'absent')[:12]}"
        for tree in sorted(set(recorded) | set(now))
        for path in sorted(set(recorded.get(tree, {})) | set(now.get(tree, {})))
        if recorded.get(tree, {}).get(path) != now.get(tree, {}).get(path) and not allowed(tree, path)
    ]


def test_golden_releases_are_byte_identical_to_the_recorded_digests(tmp_path):
    """The token files, indices, receipts, manifests and stats are the
    bytes recorded before the redesign; all files are run-config-v2.json's.
    """
    script = ROOT / "scripts" / "golden_releases.py"
    golden = ROOT / "tests" / "golden"
    result = subprocess.run(
        [sys.executable, str(script), "record", str(tmp_path / "now.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    now = json.loads((tmp_path / "now.json").read_text())

    def changed_on_purpose(tree: str, path: str) -> bool:
        prefix = "release/" if tree == "sample" else ""
        shipped = path.startswith(
            tuple(prefix + folder for folder in (SHIPPED_TOKENIZER_DIR, PREVIEW_DIR, PICTURES_DIR))
        )
        changed = CHANGED_BY_TOKENIZER_FILES.get(tree, set()) | CHANGED_BY_LLAMA3_BEGIN_OF_TEXT.get(tree, set())
        return path.rsplit("/", 1)[-1] in CHANGED_BY_RUN_CONFIG_2 or path in changed or shipped

    assert _differences(json.loads((golden / "before-redesign.json").read_text()), now, changed_on_purpose) == []
    assert _differences(json.loads((golden / "run-config-v2.json").read_text()), now) == []
