"""The release card says what is true when the build writes it, with YAML no value can break."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from release_edits import edit_json  # the fixtures both and llmc_bos: tests/conftest.py

from hf_tokbin.cards.preview import preview_metadata
from hf_tokbin.cards.release import HUB_LICENSES, render_release_card
from hf_tokbin.errors import TokbinError, VerificationError
from hf_tokbin.formats import llmc


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    head, found, _ = card.removeprefix("---\n").partition("\n---\n")
    assert found
    return yaml.safe_load(head)


@pytest.fixture
def copy(both, tmp_path) -> Path:  # noqa: F811
    return Path(shutil.copytree(both, tmp_path / "release"))


def with_corpus(root: Path, **fields) -> str:
    edit_json(root / "run_config.json", lambda c: c["corpus"].update(fields))
    return render_release_card(root)


def test_the_card_claims_no_push_it_has_not_seen(both):  # noqa: F811
    card = (both / "README.md").read_text(encoding="utf-8")
    assert "published in verified commits" not in card.lower()
    assert "COMPLETE.json" in card and "SHA-256" in card
    assert "hf-tokbin push" in card  # publishing is named as what a push adds


def test_the_card_names_no_package_that_does_not_exist(both):  # noqa: F811
    card = (both / "README.md").read_text(encoding="utf-8")
    assert "pip install hf_tokbin\n" not in card and "pip install hf_tokbin`" not in card
    version = json.loads((both / "run_config.json").read_text())["versions"]["hf_tokbin"]
    assert f"hf_tokbin {version}" in card  # the version that built it, to install from its source


@pytest.mark.parametrize("fixture", ["both", "llmc_bos"])
def test_the_card_counts_llmc_tokens_as_the_files_hold_them(request, fixture):
    root = request.getfixturevalue(fixture)
    card = (root / "README.md").read_text(encoding="utf-8")
    manifest = json.loads(next((root / "tokens").rglob(llmc.MANIFEST_NAME)).read_text())
    for split in ("train", "val"):
        files = [f for f in manifest["files"] if f["split"] == split]
        documents, tokens = sum(f["n_docs"] for f in files), sum(f["n_tokens"] for f in files)
        row = f"| `{split}` | {len(files):,} | {documents:,} | {tokens:,} |"
        assert row in card, (row, card)


def test_language_no_stays_a_string(copy):
    meta = front_matter(with_corpus(copy, language=["no", "en"]))
    assert meta["language"] == ["no", "en"]


@pytest.mark.parametrize("license", ["a: b", "'", "mit --- configs: [x]"])
def test_a_license_cannot_inject_yaml(copy, license):
    card = with_corpus(copy, license=license)
    meta = front_matter(card)
    # The only configs: the release's own preview (cards/preview.py), never one a license wrote.
    assert meta.get("configs") == preview_metadata(copy).get("configs") and meta["license"] == "other"
    assert set(meta) <= {
        "license",
        "license_name",
        "language",
        "size_categories",
        "task_categories",
        "pretty_name",
        "tokenizer",
        "tags",
        "viewer",
        "configs",
    }


def test_a_hub_license_id_is_written_as_it_is(copy):
    assert "apache-2.0" in HUB_LICENSES and "mit" in HUB_LICENSES
    assert front_matter(with_corpus(copy, license="apache-2.0"))["license"] == "apache-2.0"


def test_a_license_outside_the_hubs_list_is_other_with_its_name(copy):
    meta = front_matter(with_corpus(copy, license="my-license-1.0"))
    assert (meta["license"], meta["license_name"]) == ("other", "my-license-1.0")


@pytest.mark.parametrize(
    ("field", "value"),
    [("license", "mit\nconfigs:\n-\n---"), ("license", "mit\n---\nconfigs: [x]"), ("language", ["en", "x\ny"])],
)
def test_a_record_string_with_a_newline_never_reaches_the_card(copy, field, value):
    # Refused when run_config.json is read, before any card is rendered.
    with pytest.raises(TokbinError, match=rf"corpus\.{field}(\[1\])?: a record's strings hold no control characters"):
        with_corpus(copy, **{field: value})


def test_a_language_that_is_no_hub_code_is_left_out_of_the_yaml_and_named(copy):
    card = with_corpus(copy, language=["en", "english", "x y"])
    assert front_matter(card)["language"] == ["en"]
    assert "`english`" in card


def test_a_dataset_name_cannot_break_the_yaml(copy):
    edit_json(copy / "run_config.json", lambda c: c.update(dataset="yes: no --- &a *b"))
    meta = front_matter(render_release_card(copy))
    assert meta["pretty_name"].startswith("yes: no --- &a *b")


def test_a_dataset_name_holding_a_newline_is_refused_as_no_folder_name(copy):
    """The dataset names the folder tokens/<tokenizer_id>/<dataset>/: one folder name (rules.is_folder_name)."""
    edit_json(copy / "run_config.json", lambda c: c.update(dataset="yes: no\n---"))
    # Refused as it is read: no string of a record holds a control character.
    with pytest.raises(
        VerificationError, match="run_config.json: dataset: a record's strings hold no control characters"
    ):
        render_release_card(copy)


def test_a_corpus_name_with_shell_glob_and_markdown_characters_gives_card_commands_that_run_nothing(tmp_path):
    # The card's llm.c lines are pasted into a shell: a name holding $(...), a backtick, glob brackets or a table's
    # pipe must reach the trainer as the folder's own name, run nothing, and render as the same text on the Hub.
    import glob
    import html
    import shlex

    from markdown_it import MarkdownIt
    from release_fixtures import stories, write_corpus

    from hf_tokbin.pipeline import build, plan_build
    from hf_tokbin.tokenizer import resolve_tokenizer

    name = "a[1]$(touch x)`y`|z"
    corpus = write_corpus(
        tmp_path / "corpus", [("train", stories(5, seed=1)), ("validation", stories(3, seed=2))], name=name
    )
    out = tmp_path / "release"
    build(plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), out), progress=False)
    folder = out / "tokens" / "byte" / name
    rendered = html.unescape(
        MarkdownIt("commonmark").enable("table").render((out / "README.md").read_text(encoding="utf-8"))
    )
    assert (
        f"<code>./train_gpt2cu -i {shlex.quote(glob.escape('tokens/byte/' + name) + '/train-*.bin')} -j " in rendered
    )
    for line in (out / "README.md").read_text(encoding="utf-8").splitlines():
        if "train_gpt2cu -i" in line and "RELEASE" not in line:
            command = line.split("e.g. ", 1)[1].rsplit(";", 1)[0].strip("`").strip()
            words = shlex.split(
                command
            )  # what a shell passes: no substitution happened, and the glob names only the folder
            assert words[:2] == ["./train_gpt2cu", "-i"]
            assert [Path(p).name for p in glob.glob(str(out / words[2]))] == [
                p.name for p in sorted(folder.glob("train-*.bin"))
            ]
    cells = [row for row in rendered.split("<tr>") if "llm.c token files" in row]
    assert cells and f"<td><code>tokens/byte/{name}/{{train,val}}-NNNNN.bin</code></td>" in cells[0]


@pytest.mark.parametrize("name", ["it's", "a[1]", "back\\slash", "star*"])
def test_the_card_never_holds_the_builder_s_path_even_where_quoting_cuts_it(both, tmp_path, name):  # noqa: F811
    # shlex.quote writes ' as '"'"', a glob [ as [[], a Python literal ' as \x27: the path appears in pieces.
    root = Path(shutil.copytree(both, tmp_path / name / "release"))
    card = render_release_card(root)
    assert str(tmp_path) not in card
    assert "hf-tokbin recipe RELEASE --for llmc" in card and "hf-tokbin recipe RELEASE --for megatron" in card
    plain = render_release_card(Path(shutil.copytree(both, tmp_path / "plain" / "release")))
    assert str(tmp_path) not in plain and "./train_gpt2cu -i 'RELEASE/tokens/" in plain  # an ordinary path: the lines


# One folder name each (no "/"): an element with an event handler, a link, an <a> element, emphasis and a backtick.
HOSTILE_NAMES = [
    '<img src=x onerror="alert(1)">',
    "[a link](https:evil.example)",
    "tick`cut` *bold* _em_ #h",
    "<a href='https:evil.example'>x",
]


def _rendered(card: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(card.partition("\n---\n")[2])


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_render_as_text_in_the_release_card(tmp_path, name):
    import html

    from release_fixtures import stories, write_corpus

    from hf_tokbin.pipeline import build, plan_build
    from hf_tokbin.tokenizer import resolve_tokenizer

    corpus = write_corpus(
        tmp_path / "corpus", [("train", stories(4, seed=1)), ("validation", stories(2, seed=2))], name=name
    )
    out = tmp_path / "release"
    build(plan_build(corpus, resolve_tokenizer("byte", tokenizer_id=name, doc_sep_id=0), out), progress=False)
    rendered = _rendered((out / "README.md").read_text(encoding="utf-8"))
    # The only images: the card's own pictures, whose paths and alt texts hold no name.
    images = re.findall(r"<img[^>]*>", rendered)
    own = re.compile(r'<img src="pictures/lengths-(train|validation)\.svg" alt="Document lengths of \1, in tokens" />')
    assert len(images) == 2 and all(own.fullmatch(image) for image in images), images
    assert "<a href" not in rendered
    title = rendered.split("</h1>")[0]
    assert html.unescape(title) == f"<h1>{name} tokenized with {name} for Megatron and llm.c"
    # Every code span holding the name shows it whole: no backtick cut it.
    spans = [html.unescape(s) for s in re.findall(r"<code>(.*?)</code>", rendered, re.S)]
    assert any(s == name for s in spans), spans


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_render_as_text_in_the_corpus_card(tmp_path, name):
    import html

    from hf_tokbin.corpus.write import write_tinystories_corpus

    (tmp_path / "train.txt").write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(tmp_path / "train.txt", None, tmp_path / "corpus", name=name)
    rendered = _rendered((tmp_path / "corpus" / "README.md").read_text(encoding="utf-8"))
    assert "<img" not in rendered and "<a href" not in rendered
    assert html.unescape(rendered.split("</h1>")[0]) == f"<h1>{name}"
