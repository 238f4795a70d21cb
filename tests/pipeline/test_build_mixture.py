"""Mixture builds end to end: three corpora (two languages and code, uneven sizes) in named proportions.

The byte tokenizer's ids are the text's bytes and every document starts with its source's letter
(``tests/mixture_fixtures.py``), so the llm.c train files say, document by document, which source each came from.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import shutil

import pyarrow.parquet as pq
import pytest
from mixture_fixtures import SEPARATOR, llmc_documents, source_of, write_mixture_corpora, write_sourced_corpus

import hf_tokbin
from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError

MIX = "en=0.5,fr=0.3,code=0.2"
TOKENS = 130_000  # code (about 16,000 train tokens) needs about 1.65 epochs of its 20%: under --max-epochs 2


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return write_mixture_corpora(tmp_path_factory.mktemp("corpora"))


def build(corpora, out, mix=MIX, tokens=TOKENS, max_epochs=2, **options):
    spec = hf_tokbin.MixtureSpec.parse(mix, tokens, max_epochs)
    return hf_tokbin.build_release(
        [str(c) for c in corpora], "byte", out, doc_sep=SEPARATOR, mix=spec, progress=False, **options
    )


@pytest.fixture(scope="module")
def mixed(corpora, tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed") / "release"
    build(corpora, out)
    return out


def corpus_texts(corpora) -> dict[str, collections.Counter]:
    texts = {}
    for folder in corpora:
        counter = collections.Counter()
        for path in sorted((folder / "data").glob("train-*.parquet")):
            counter.update(t.encode() for t in pq.read_table(path).column("text").to_pylist())
        texts[folder.name] = counter
    return texts


def test_shares_hold_over_the_stream_and_in_every_window(mixed):
    stats = json.loads((mixed / "stats.json").read_text())["mixture"]
    documents = llmc_documents(mixed / "tokens" / "byte" / "en-fr-code")
    tokens = collections.Counter()
    for doc in documents:
        tokens[source_of(doc)] += doc.size + 1  # the separator before it
    whole = sum(tokens.values())
    assert whole == sum(s["llmc"]["tokens"] for s in stats["sources"].values())
    for name, source in stats["sources"].items():
        assert tokens[name] == source["llmc"]["tokens"]
        assert abs(tokens[name] / whole - source["target_share"]) < 0.01, name
    # every window of 5% of the stream, slid a document at a time
    window = whole // 20
    sizes = [(source_of(d), d.size + 1) for d in documents]
    start, held, inside = 0, collections.Counter(), 0
    for name, size in sizes:
        held[name] += size
        inside += size
        while inside - sizes[start][1] >= window:
            held[sizes[start][0]] -= sizes[start][1]
            inside -= sizes[start][1]
            start += 1
        if inside >= window:
            for source, share in (("en", 0.5), ("fr", 0.3), ("code", 0.2)):
                assert abs(held[source] / inside - share) < 0.05, (source, start)


def test_whole_documents_repeated_at_most_the_cap(mixed, corpora):
    texts = corpus_texts(corpora)
    documents = llmc_documents(mixed / "tokens" / "byte" / "en-fr-code")
    seen = collections.Counter(bytes(d.astype("uint8")) for d in documents)
    for text, times in seen.items():
        source = text[:1].decode()
        name = {"E": "en", "F": "fr", "C": "code"}[source]
        assert text in texts[name], "a document was cut or changed"
        assert times <= 2 * texts[name][text]  # --max-epochs 2: each copy of a text at most twice
    stats = json.loads((mixed / "stats.json").read_text())["mixture"]["sources"]
    assert stats["code"]["llmc"]["epochs"] > 1.5 and stats["en"]["llmc"]["epochs"] < 1  # one upsampled, one drawn


def test_megatron_pairs_and_validation_keep_every_document(mixed):
    stats = json.loads((mixed / "stats.json").read_text())
    for name, by_split in stats["sources"].items():
        assert by_split["train"]["documents"] == stats["mixture"]["sources"][name]["available"]["documents"]
        assert by_split["validation"]["documents"] > 0  # no source vanishes from validation
    val = llmc_documents(mixed / "tokens" / "byte" / "en-fr-code", "val")
    assert len(val) == stats["splits"]["validation"]["documents"]
    assert {source_of(d) for d in val} == {"en", "fr", "code"}


def test_same_bytes_whatever_num_proc(mixed, corpora, tmp_path):
    build(corpora, tmp_path / "two", num_proc=2, batch_size=37)
    assert (tmp_path / "two" / "COMPLETE.json").read_bytes() == (mixed / "COMPLETE.json").read_bytes()


def test_a_mix_only_change_reuses_the_encoded_parts(corpora, tmp_path):
    out = tmp_path / "r"
    with pytest.raises(BuildError, match="code"):
        build(corpora, out, tokens=200_000)  # code cannot give 20% of that at 2 epochs
    assert not (out / "COMPLETE.json").exists() and (out / "receipts").is_dir()
    summary = build(corpora, out)
    assert summary.build.parts_skipped == summary.build.parts_built + summary.build.parts_skipped > 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--mix", "en=0.5,fr=x,code=0.2"], "the weight of fr must be a positive number"),
        (["--mix", "en=0.5,en=0.3,code=0.2"], "names a source twice"),
        (["--mix", "en=0.5,de=0.3,code=0.2"], "names each --corpus once"),
        (["--mix", "en=0.5,fr=0.5"], "names each --corpus once"),
        (["--mix", MIX, "--tokens", "lots"], "--tokens must be a count"),
        (["--tokens", "2M"], "give --mix"),
        ([], "several --corpus make a mixture"),
    ],
)
def test_a_bad_mix_is_one_line_and_writes_nothing(corpora, tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    corpus_args = [x for c in corpora for x in ("--corpus", str(c))]
    code = main(["build", *corpus_args, "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet", *argv])
    err = capsys.readouterr().err.strip()
    assert code != 0 and message in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_weights_that_do_not_add_up_are_normalised_and_said(corpora, tmp_path, capsys):
    corpus_args = [x for c in corpora for x in ("--corpus", str(c))]
    argv = ["build", *corpus_args, "--tokenizer", "byte", "--doc-sep", "0", "--out", str(tmp_path / "r"), "--quiet"]
    assert main([*argv, "--mix", "en=5,fr=3,code=2", "--dry-run"]) == 0
    assert "add up to 10, not 1: taken as shares en=0.5, fr=0.3, code=0.2" in capsys.readouterr().out


def test_the_card_and_summary_show_each_source_against_its_target(mixed):
    card = (mixed / "README.md").read_text()
    stats = json.loads((mixed / "stats.json").read_text())["mixture"]
    assert f"Mixture of {stats['tokens']:,} train tokens" in card
    for name, source in stats["sources"].items():
        held = source["llmc"]
        row = f"| `{name}` | {source['target_share']:.1%} | {held['share']:.1%} | {held['epochs']:.2f} |"
        assert row in card


def test_a_source_without_train_documents_is_refused_at_the_plan(corpora, tmp_path):
    from release_fixtures import write_corpus

    empty = write_corpus(tmp_path / "math", [("validation", ["Mx = 1"])], name="math")
    with pytest.raises(BuildError, match="source math has no train documents"):
        build([*corpora, empty], tmp_path / "r", mix="en=0.5,fr=0.2,code=0.2,math=0.1")
    assert not (tmp_path / "r").exists()


def test_a_shard_in_two_sources_is_refused_at_the_plan(corpora, tmp_path):
    """A corpus copied under another name: its shards' bytes are another source's, so its documents would be
    counted under both (and the release's run_config.json would refuse to be read)."""
    from release_fixtures import write_corpus

    french = [pq.read_table(p).column("text").to_pylist() for p in sorted((corpora[1] / "data").glob("train-*"))]
    copy = write_corpus(tmp_path / "fr2", [("train", texts) for texts in french], name="fr2")
    with pytest.raises(BuildError) as refused:
        build([*corpora, copy], tmp_path / "r", mix="en=0.5,fr=0.2,code=0.2,fr2=0.1")
    message = str(refused.value)
    assert "\n" not in message
    assert "fr/data/train-00000.parquet and fr2/data/train-00000.parquet" in message
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["cafe\u0301", "x|y"], ids=["NFD", "markup"])
def test_a_corpus_whose_name_cannot_name_a_source_is_named_with_the_rule(corpora, tmp_path, name):
    """A folder name need not be a source name: the message shows the name as its code points, not as a name that
    looks like the one --mix gives."""
    from release_fixtures import write_corpus

    odd = write_corpus(tmp_path / "odd", [("train", ["text"]), ("validation", ["more"])], name=name)
    with pytest.raises(BuildError) as refused:
        build([corpora[0], odd], tmp_path / "r", mix="en=0.5,café=0.5")
    message = str(refused.value)
    assert "\n" not in message and "odd" in message and ascii(name) in message
    assert "a corpus in a mixture names its source" in message and "NFC" in message
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("formats", [("llmc",), ("megatron",)])
def test_one_format_alone(corpora, mixed, tmp_path, formats):
    build(corpora, tmp_path / "r", formats=formats)
    stats = json.loads((tmp_path / "r" / "stats.json").read_text())["mixture"]
    both = json.loads((mixed / "stats.json").read_text())["mixture"]
    assert stats["tokens"] == both["tokens"]
    for name, source in stats["sources"].items():
        assert source["available"] == both["sources"][name]["available"]
        # the llm.c stream is the same whether its ids are staged or read from the Megatron .bin
        assert source["llmc"] == (both["sources"][name]["llmc"] if "llmc" in formats else None)
    if formats == ("llmc",):
        folder = "tokens/byte/en-fr-code"
        for path in sorted((mixed / folder).glob("*.bin")):
            assert (tmp_path / "r" / folder / path.name).read_bytes() == path.read_bytes()


def test_by_source_column_of_one_corpus(tmp_path):
    corpus = write_sourced_corpus(tmp_path / "in")
    out = tmp_path / "r"
    spec = hf_tokbin.MixtureSpec.parse("en=0.5,fr=0.3,code=0.2", TOKENS, 2, by="source")
    hf_tokbin.build_release(str(corpus), "byte", out, doc_sep=SEPARATOR, mix=spec, progress=False)
    config = json.loads((out / "run_config.json").read_text())["mix"]
    assert config["by"] == "source" and config["from"]["name"] == "mixed"
    stats = json.loads((out / "stats.json").read_text())
    manifest = json.loads((corpus / "_MANIFEST.json").read_text())["documents_by_source"]
    for split, by_source in manifest.items():  # every document of every source, each in its own split
        assert {n: c[split]["documents"] for n, c in stats["sources"].items() if split in c} == by_source
    documents = llmc_documents(out / "tokens" / "byte" / "mixed")
    tokens = collections.Counter()
    for doc in documents:
        tokens[source_of(doc)] += doc.size + 1
    for name, source in stats["mixture"]["sources"].items():
        assert abs(tokens[name] / sum(tokens.values()) - source["target_share"]) < 0.01
    hf_tokbin.verify_release(out)  # raises on any rule it breaks


@pytest.mark.parametrize(
    "mix, message",
    [
        ("en=0.5,fr=0.5", "names every source of the corpus once"),
        ("en=0.5,fr=0.3,code=0.1,math=0.1", "names every source of the corpus once"),
    ],
)
def test_by_source_names_every_source(tmp_path, mix, message):
    corpus = write_sourced_corpus(tmp_path / "in", sizes={"en": 30, "fr": 20, "code": 10})
    with pytest.raises(BuildError, match=message):
        build_by_source(corpus, tmp_path / "r", mix)


def test_by_source_needs_a_corpus_that_counts_them(corpora, tmp_path):
    with pytest.raises(BuildError, match="needs a corpus that counts its sources"):
        build_by_source(corpora[0], tmp_path / "r", "en=0.5,fr=0.5")


def build_by_source(corpus, out, mix):
    spec = hf_tokbin.MixtureSpec.parse(mix, None, 1, by="source")
    return hf_tokbin.build_release(str(corpus), "byte", out, doc_sep=SEPARATOR, mix=spec, progress=False)


def test_mix_by_without_mix_is_refused(corpora, tmp_path, capsys):
    argv = ["build", "--corpus", str(corpora[0]), "--tokenizer", "byte", "--out", str(tmp_path / "r"), "--quiet"]
    assert main([*argv, "--mix-by", "source"]) != 0
    assert "--tokens, --max-epochs and --mix-by apply to a mixture: give --mix" in capsys.readouterr().err


def test_info_gives_the_shares_against_their_targets(mixed, capsys):
    stats = json.loads((mixed / "stats.json").read_text())["mixture"]
    assert main(["info", str(mixed)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("mixture of"))
    assert line.startswith(f"mixture of {stats['tokens']:,} train tokens")
    for name, source in stats["sources"].items():
        assert f"{name} {source['llmc']['share']:.1%} ({source['llmc']['epochs']:.2f} epochs)" in line
    assert main(["info", str(mixed), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixture"] == stats


def test_dry_run_json_carries_the_mixture_spec_and_an_estimate(corpora, mixed, tmp_path, capsys):
    corpus_args = [x for c in corpora for x in ("--corpus", str(c))]
    out = tmp_path / "r"
    argv = ["build", *corpus_args, "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet", "--json"]
    assert main([*argv, "--mix", MIX, "--tokens", "130k", "--max-epochs", "2", "--dry-run"]) == 0
    record = json.loads(capsys.readouterr().out)
    mix, estimate = record["mix"], record["mix_estimate"]
    assert [(s["name"], s["weight"]) for s in mix["sources"]] == [("en", 0.5), ("fr", 0.3), ("code", 0.2)]
    assert (mix["by"], mix["tokens"], mix["max_epochs"]) == ("corpus", 130_000, 2)
    assert not out.exists()
    # the estimate from sampled documents is within a fifth of each source's tokens, and meets this mix
    stats = json.loads((mixed / "stats.json").read_text())["mixture"]["sources"]
    for name, tokens in estimate["tokens"].items():
        assert abs(tokens - stats[name]["available"]["tokens"]) < stats[name]["available"]["tokens"] / 5
    assert (estimate["total"], estimate["refused"]) == (130_000, None)


def test_a_mix_out_of_reach_is_warned_before_work_and_refused_after(corpora, tmp_path, capsys):
    corpus_args = [x for c in corpora for x in ("--corpus", str(c))]
    out = tmp_path / "r"
    argv = ["build", *corpus_args, "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet"]
    assert main([*argv, "--mix", MIX, "--tokens", "10M", "--max-epochs", "2"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("warning: estimated from sampled documents, --mix: source en has")
    assert "the encoded parts are kept" in err[-1] and len(err) == 2
    assert not (out / "COMPLETE.json").exists() and not (out / "stats.json").exists()


def test_a_source_corpus_with_its_own_source_column_previews_its_mixture_source(corpora, tmp_path):
    import pyarrow as pa

    from hf_tokbin._io import sha256_file
    from hf_tokbin.formats.corpus_manifest import CorpusManifest

    code = tmp_path / "code"
    shutil.copytree(corpora[2], code)
    manifest = CorpusManifest.read(code)
    shards = []
    for shard in manifest.shards:  # a column named source that the corpus does not count
        table = pq.read_table(code / shard.path)
        pq.write_table(table.append_column("source", pa.array(["elsewhere"] * table.num_rows)), code / shard.path)
        size, digest = (code / shard.path).stat().st_size, sha256_file(code / shard.path)
        shards.append(dataclasses.replace(shard, size=size, sha256=digest))
    dataclasses.replace(manifest, shards=tuple(shards)).write(code)
    out = tmp_path / "r"
    build([*corpora[:2], code], out)
    sources = set(pq.read_table(out / "preview" / "train.parquet").column("source").to_pylist())
    assert sources <= {"en", "fr", "code"} and "code" in sources
    hf_tokbin.verify_release(out)
