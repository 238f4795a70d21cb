"""Review: a tokenizer.json that carries truncation or padding settings must not cut or pad documents.

``Tokenizer.save`` keeps ``enable_truncation``/``enable_padding``, so such files
exist on the Hub. ``tokenizers`` then cuts every document at ``max_length`` and
fills the shorter documents of a batch with the pad id: a release would hold
neither the document's text nor ids equal to the fast path's.
"""

from __future__ import annotations

import json
import pickle

import pytest
from tokenizer_files import gpt2_tokenizer_json, story_texts
from tokenizers import Tokenizer

from hf_tokbin.tokenizer.encoder import DocumentEncoder

pytestmark = pytest.mark.slow  # real tokenizers under every tokenizer.json setting

SETTINGS = {
    "truncation": {"direction": "Right", "max_length": 300, "strategy": "LongestFirst", "stride": 0},
    "padding": {
        "strategy": "BatchLongest",
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": 50256,
        "pad_type_id": 0,
        "pad_token": "<|endoftext|>",
    },
}


def _whole_ids(texts: list[str]) -> list[list[int]]:
    """tokenizers' ids of each whole text (the plain GPT-2 file: no truncation, no padding)."""
    reference = Tokenizer.from_file(str(gpt2_tokenizer_json() / "tokenizer.json"))
    reference.encode_special_tokens = True
    return [reference.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.mark.parametrize("settings", [["truncation"], ["padding"], ["truncation", "padding"]])
@pytest.mark.parametrize("fast", ["auto", "never"])
def test_truncation_and_padding_in_tokenizer_json_change_no_document(tmp_path, settings, fast):
    config = json.loads((gpt2_tokenizer_json() / "tokenizer.json").read_text())
    config.update({name: SETTINGS[name] for name in settings})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    texts = [*story_texts(6, seed=2), "word " * 800, "short"]  # one document well over max_length
    encoder = DocumentEncoder.from_tokenizer_json(path, fast=fast)
    encoder.check_fast_path(story_texts(4))
    want = _whole_ids(texts)
    for engine in (encoder, pickle.loads(pickle.dumps(encoder))):  # as Dataset.map's workers receive it
        ids, lengths = engine.encode_batch(texts)
        assert lengths.tolist() == [len(w) for w in want]
        assert ids.tolist() == [i for w in want for i in w]


def test_a_vocabulary_with_a_huge_id_gap_stays_on_tokenizers_instead_of_aborting(tmp_path):
    # gigatoken sizes its tables by the largest id (~64 bytes per id): an entry at 2**31 made
    # it ask for 34 GB and abort the whole build ("memory allocation ... failed"); at 2**26
    # it takes 4 GB. Run under an address-space limit in a child process, so the old
    # behaviour fails the test instead of exhausting the machine. (tokenizers' own to_str
    # needs 4 bytes per id: 256 MB here.)
    import subprocess
    import sys
    import textwrap

    config = json.loads((gpt2_tokenizer_json() / "tokenizer.json").read_text())
    config["model"]["vocab"]["hello"] = 2**26
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    script = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from hf_tokbin.tokenizer.encoder import DocumentEncoder
        encoder = DocumentEncoder.from_tokenizer_json({str(path)!r})
        check = encoder.check_fast_path(["hello world"])
        ids, lengths = encoder.encode_batch(["hello world", "say hello"])
        print(check.used, ids.tolist(), lengths.tolist())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    reference = Tokenizer.from_file(str(path))
    want = [reference.encode(t, add_special_tokens=False).ids for t in ("hello world", "say hello")]
    assert done.stdout.split(" ", 1)[0] == "False"
    assert done.stdout.strip().split(" ", 1)[1] == f"{[i for w in want for i in w]} {[len(w) for w in want]}"


def test_bpe_dropout_is_refused_with_one_line(tmp_path, capsys):
    # With model.dropout tokenizers skips merges at random: the same corpus gave different ids
    # on every build (and a resumed build mixed two encodings), and verify cannot tell.
    from release_fixtures import write_corpus

    from hf_tokbin.cli import main

    config = json.loads((gpt2_tokenizer_json() / "tokenizer.json").read_text())
    config["model"]["dropout"] = 0.1
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(config))
    corpus = write_corpus(
        tmp_path / "corpus", [("train", story_texts(30, seed=1)), ("validation", story_texts(3, seed=2))]
    )
    capsys.readouterr()
    status = main(
        [
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            str(folder),
            "--doc-sep",
            "50256",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert status == 1
    assert "BPE dropout makes the ids random" in err and "tokenizer.json" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "COMPLETE.json").exists()
