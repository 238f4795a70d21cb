"""Review (pending, fix in hf_tokbin/pipeline/plan.py): a tokenizer whose largest id is 2**31 or more.

llm.c's uint32 layout holds ids up to 2**32 - 1, so ``plan_build`` accepts such a
tokenizer for ``--format llmc``. But every build stages the llm.c stream as an
int32 Megatron pair (build/part.py), and before that ``tokenizers``' own
``to_str`` (which the encoder calls for its workers) allocates 4 bytes per id:
8 GiB for an id at 2**31. So the build aborts the process (out of memory) or,
with memory to spare, fails later with "vocab_size too large for Megatron's
int32 ids" naming no file, after run_config.json was written. The rule belongs
in plan_build, before anything is loaded or written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from release_fixtures import write_corpus
from tokenizer_files import byte_level_bpe_json, story_texts

TINY = byte_level_bpe_json()


def test_an_id_at_2_31_is_refused_at_planning_with_one_line(tmp_path):
    # Every byte-level character (so any text encodes), plus one entry at id 2**31.
    from tokenizers.pre_tokenizers import ByteLevel

    config = json.loads(json.dumps(TINY))
    config["model"]["vocab"] = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    config["model"]["vocab"]["Ġthe"] = 2**31
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(config))
    corpus = write_corpus(
        tmp_path / "corpus", [("train", story_texts(5, seed=1)), ("validation", story_texts(2, seed=2))]
    )
    out = tmp_path / "out"
    script = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from hf_tokbin.cli import main
        sys.exit(main(["build", "--corpus", {str(corpus)!r}, "--tokenizer", {str(folder)!r}, "--format", "llmc",
                       "--doc-sep", "0", "--out", {str(out)!r}, "--quiet"]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-300:]
    assert "tokenizer.json" in done.stderr and "2**31" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() or not any(out.iterdir())  # refused before anything was written
