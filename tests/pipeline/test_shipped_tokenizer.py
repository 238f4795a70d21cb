"""A release ships its tokenizer: ``tokenizer/`` holds the files the build read, byte for byte.

Listed in ``COMPLETE.json`` with the SHA-256 ``run_config.json`` pins, so a
recipe's tokenizer flag points inside the release, and a pulled copy decodes
its own tokens to the corpus text with nothing else at hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin._io import sha256_file
from hf_tokbin.errors import VerificationError
from hf_tokbin.formats import megatron
from hf_tokbin.formats.release import Complete
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.trainers import LoaderSettings, recipe
from hf_tokbin.verify.release import verify_release

EOS = "<|endoftext|>"


def train_tokenizer(folder, texts):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(texts, trainer)
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": tokenizer.token_to_id(EOS)}))
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shipped")
    train, validation = stories(30, 1), stories(8, 2)
    tokenizer = train_tokenizer(tmp / "tok", train + validation)
    corpus = write_corpus(tmp / "corpus", [("train", train), ("validation", validation)])
    out = tmp / "release"
    build(plan_build(corpus, resolve_tokenizer(str(tokenizer)), out), progress=False)
    return out, tokenizer, train, validation


def test_the_release_ships_the_files_the_build_read(built):
    out, tokenizer, _, _ = built
    assert sorted(p.name for p in (out / "tokenizer").iterdir()) == ["generation_config.json", "tokenizer.json"]
    for name in ("tokenizer.json", "generation_config.json"):
        assert (out / "tokenizer" / name).read_bytes() == (tokenizer / name).read_bytes()
    listed = {f.path: f.sha256 for f in Complete.read(out).files}
    pinned = json.loads((out / "run_config.json").read_text())["tokenizer"]["sha256"]
    assert listed["tokenizer/tokenizer.json"] == pinned == sha256_file(tokenizer / "tokenizer.json")
    assert "tokenizer/generation_config.json" in listed
    verify_release(out)


def test_recipes_point_inside_the_release(built):
    out = built[0]
    argv = [a for line in recipe(out, "megatron", LoaderSettings(batch_size=2, seq_len=8)).commands for a in line]
    assert argv[argv.index("--tokenizer-model") + 1] == str(out / "tokenizer")
    maxtext = recipe(out, "maxtext", LoaderSettings(batch_size=2, seq_len=8)).lines
    assert any(line.strip("' \\") == f"tokenizer_path={out / 'tokenizer'}" for line in maxtext)


def test_a_shipped_tokenizer_that_is_not_the_pinned_one_fails_verify(built, tmp_path):
    import shutil

    copy = shutil.copytree(built[0], tmp_path / "copy")
    config = json.loads((copy / "run_config.json").read_text())
    config["tokenizer"]["sha256"] = "0" * 64  # COMPLETE.json re-listed below, so only the tokenizer rule can object
    (copy / "run_config.json").write_text(json.dumps(config))
    from hf_tokbin.formats.records import FileEntry

    files = tuple(
        FileEntry(f.path, (copy / f.path).stat().st_size, sha256_file(copy / f.path))
        for f in Complete.read(copy).files
    )
    (copy / "COMPLETE.json").write_text(Complete(files).to_json())
    with pytest.raises(VerificationError):
        verify_release(copy)


def test_a_pulled_release_decodes_with_its_own_tokenizer(built, tmp_path):
    from hostile_hub import HostileHub
    from tokenizers import Tokenizer

    from hf_tokbin.hub import RetryPolicy, pull_release

    out, _, train, validation = built
    token = "hf_shipped_tokenizer_test_0123456789"
    with HostileHub(token=token) as hub:
        hub.seed_repo("tester/shipped", out)
        pulled = tmp_path / "pulled"
        pull_release(
            "tester/shipped",
            pulled,
            endpoint=hub.url,
            token=token,
            retry=RetryPolicy(attempts=2, base_delay=0.01),
            progress=False,
        )
    tokenizer = Tokenizer.from_file(str(pulled / "tokenizer" / "tokenizer.json"))
    eos = tokenizer.token_to_id(EOS)
    for split, texts in (("train", train), ("validation", validation)):
        (idx,) = sorted((pulled / "shards" / split).glob("*.idx"))
        pair = megatron.MegatronPair(idx)
        decoded = []
        for k in range(len(pair)):
            ids = np.asarray(pair[k]).tolist()
            assert ids[-1] == eos
            decoded.append(tokenizer.decode(ids[:-1], skip_special_tokens=False))
        assert decoded == texts


def test_the_card_carries_a_recipe_per_format_with_no_absolute_path(built):
    out = built[0]
    card = (out / "README.md").read_text()
    assert "hf-tokbin recipe RELEASE --for TARGET" in card
    assert "./train_gpt2cu -i 'RELEASE/tokens/" in card and "--model d12 --overfit_single_batch 0" in card
    assert "pretrain_gpt.py" in card and "--tokenizer-model RELEASE/tokenizer" in card
    assert str(out) not in card and ".work" not in card
    assert "hf_tokbin.llmc." not in card and "from hf_tokbin.megatron import" not in card


def test_a_shipped_tokenizer_over_its_size_rule_is_refused_before_verify_loads_it(built, monkeypatch):
    # verify loads tokenizer/tokenizer.json whole to check the preview's texts: a release can pin any file there.
    import hf_tokbin.verify.release as release_checks

    size = (built[0] / "tokenizer" / "tokenizer.json").stat().st_size
    monkeypatch.setattr(release_checks, "TOKENIZER_MAX_BYTES", size - 1)
    with pytest.raises(VerificationError, match=f"at most {size - 1:,} bytes"):
        verify_release(built[0])
    monkeypatch.setattr(release_checks, "TOKENIZER_MAX_BYTES", size)
    verify_release(built[0])


def test_the_config_files_shipped_are_the_bytes_the_plan_read(tmp_path):
    # A generation_config.json changed between the plan and the finish: the release ships what the plan read.
    train, validation = stories(12, 3), stories(4, 4)
    tokenizer = train_tokenizer(tmp_path / "tok", train + validation)
    read = (tokenizer / "generation_config.json").read_bytes()
    corpus = write_corpus(tmp_path / "corpus", [("train", train), ("validation", validation)])
    plan = plan_build(corpus, resolve_tokenizer(str(tokenizer)), tmp_path / "release")
    assert json.loads(read) == {"eos_token_id": 0}
    (tokenizer / "generation_config.json").write_text(json.dumps({"eos_token_id": 5}))
    build(plan, progress=False)
    out = tmp_path / "release"
    assert (out / "tokenizer" / "generation_config.json").read_bytes() == read
    pinned = json.loads((out / "run_config.json").read_text())["tokenizer"]["config_files"]
    assert pinned == {"generation_config.json": sha256_file(out / "tokenizer" / "generation_config.json")}
    verify_release(out)


def _edit_shipped(release, tmp_path, name, text, repin):
    """A copy of ``release`` whose tokenizer/``name`` holds ``text``, COMPLETE.json (and, with ``repin``,
    run_config.json's digest of it) vouching for the new bytes, so only the rule under test can object."""
    import shutil

    from release_edits import edit_json, reseal_complete

    copy = shutil.copytree(release, tmp_path / "copy")
    (copy / "tokenizer" / name).write_text(text)
    if repin:
        edit_json(
            copy / "run_config.json",
            lambda c: c["tokenizer"]["config_files"].update({name: sha256_file(copy / "tokenizer" / name)}),
        )
    reseal_complete(copy)
    return copy


def test_a_shipped_config_naming_another_separator_fails_verify(built, tmp_path):
    copy = _edit_shipped(built[0], tmp_path, "generation_config.json", json.dumps({"eos_token_id": 5}), repin=True)
    with pytest.raises(VerificationError, match=r"generation_config\.json.*separator") as error:
        verify_release(copy)
    assert "\n" not in str(error.value)


def test_a_shipped_config_that_is_not_the_pinned_one_fails_verify(built, tmp_path):
    # Same meaning, other bytes: the digest rule alone objects.
    original = (built[0] / "tokenizer" / "generation_config.json").read_text()
    copy = _edit_shipped(built[0], tmp_path, "generation_config.json", original + " ", repin=False)
    with pytest.raises(VerificationError, match=r"generation_config\.json.*SHA-256.*config_files"):
        verify_release(copy)


# ---------------------------------------------------------------- the preview's text check always runs or says why not


def _with_preview_text(release, tmp_path, text):
    """A copy of ``release`` whose first train preview row (each format's) shows ``text``, COMPLETE.json resealed."""
    import shutil

    import pyarrow.parquet as pq
    from release_edits import reseal_complete

    copy = shutil.copytree(release, tmp_path / "copy")
    path = copy / "preview" / "train.parquet"
    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    texts = [text if row["document"] == 0 else t for t, row in zip(texts, table.select(["document"]).to_pylist())]
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", [texts]), path)
    reseal_complete(copy)
    return copy


def _partial(release, keep):
    """Turn ``release`` into a partial copy holding only the paths ``keep`` selects, as pull --include leaves one."""
    from hf_tokbin._io import canonical_json

    complete = Complete.read(release)
    held = [f for f in complete.files if keep(f.path)]
    for entry in complete.files:
        if entry not in held:
            (release / entry.path).unlink()
    (release / "COMPLETE.json").unlink()
    partial = {
        "format": "hf_tokbin.partial/1",
        "repo": "tester/x",
        "commit": "0" * 40,
        "path_in_repo": "",
        "record": "COMPLETE.json",
        "include": ["megatron"],
        "files": [f.to_dict() for f in held],
        "complete": [f.to_dict() for f in complete.files],
    }
    (release / "PARTIAL.json").write_text(canonical_json(partial))
    return release


def test_made_up_preview_text_fails_verify(built, tmp_path):
    copy = _with_preview_text(built[0], tmp_path, "a made-up story")
    with pytest.raises(VerificationError, match="row 0: text must be the document's text"):
        verify_release(copy)


def test_a_preview_without_the_tokenizer_that_checks_it_fails_verify(built, tmp_path):
    import shutil

    from release_edits import reseal_complete

    copy = _with_preview_text(built[0], tmp_path, "a made-up story")
    shutil.rmtree(copy / "tokenizer")
    reseal_complete(copy)
    with pytest.raises(VerificationError, match=r"preview.*tokenizer/tokenizer\.json"):
        verify_release(copy)


def test_a_preview_row_past_the_text_bound_is_a_stated_gap(built, tmp_path):
    from hf_tokbin.verify.preview import TEXT_CHARS_CHECKED

    copy = _with_preview_text(built[0], tmp_path, "a made-up story " + " " * TEXT_CHARS_CHECKED)
    report = verify_release(copy)
    assert any("row 0" in w and "not re-encoded" in w for w in report.warnings), report.warnings


def test_a_partial_copy_checks_the_preview_text_it_holds(built, tmp_path):
    copy = _partial(
        _with_preview_text(built[0], tmp_path, "a made-up story"),
        lambda p: not (p.startswith("tokens/") and p.endswith(".bin")),
    )
    with pytest.raises(VerificationError, match="row 0: text must be the document's text"):
        verify_release(copy)


def test_a_partial_copy_names_the_rules_it_could_not_run(built, tmp_path):
    import shutil

    copy = _partial(
        shutil.copytree(built[0], tmp_path / "copy"), lambda p: not (p.startswith("tokens/") and p.endswith(".bin"))
    )
    report = verify_release(copy)
    assert any("not checked" in w and "llm.c" in w and "Megatron" in w for w in report.warnings), report.warnings
    assert any("not checked" in w and "preview/train.parquet" in w for w in report.warnings), report.warnings
    whole = _partial(shutil.copytree(built[0], tmp_path / "whole"), lambda p: True)
    assert not any("not checked" in w for w in verify_release(whole).warnings)
