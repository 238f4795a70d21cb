"""The card's pictures: SVG charts of the document lengths and sources, the same bytes from the same release."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from release_fixtures import build_release, build_with_sources, source_rows

from hf_tokbin.cards.pictures import MAX_SOURCE_BARS, bar_chart_svg, source_bars
from hf_tokbin.errors import VerificationError
from hf_tokbin.formats.lengths import length_summaries
from hf_tokbin.formats.release import Receipt, SplitCounts
from hf_tokbin.verify.release import verify_release

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    """The same release built in two folders."""
    return [build_release(tmp_path_factory.mktemp(name)) for name in ("first", "second")]


@pytest.fixture(scope="module")
def with_sources(tmp_path_factory):
    return build_with_sources(tmp_path_factory.mktemp("sources"), source_rows(60))


def pictures(release) -> dict[str, bytes]:
    return {p.relative_to(release).as_posix(): p.read_bytes() for p in sorted((release / "pictures").glob("*"))}


def test_a_release_s_pictures_are_the_same_bytes_from_another_build(twice):
    first, second = map(pictures, twice)
    assert sorted(first) == ["pictures/lengths-train.svg", "pictures/lengths-validation.svg"]
    assert first == second


def test_a_lengths_picture_is_svg_with_one_bar_per_bucket_of_the_card_s_table(twice):
    release = twice[0]
    receipts = [Receipt.read(p) for p in sorted((release / "receipts").glob("*.json"))]
    for split, summary in length_summaries(release, receipts).items():
        svg = ET.fromstring((release / f"pictures/lengths-{split}.svg").read_bytes())
        assert svg.tag == f"{SVG}svg" and svg.find(f"{SVG}title").text == f"{split}: documents by length in tokens"
        bars = svg.findall(f"{SVG}rect")[1:]  # the first is the background
        assert len(bars) == len(summary.buckets)
        texts = [t.text for t in svg.findall(f"{SVG}text")]
        for low, high, n in summary.buckets:
            assert f"{low:,}–{high:,}" in texts and f"{n:,} ({100 * n / summary.documents:.1f}%)" in texts
        # The longest bar is the largest bucket's; every bucket with documents has a visible bar.
        widths = [int(bar.get("width")) for bar in bars]
        largest = max(n for _, _, n in summary.buckets)
        assert all(
            (w == 320) == (n == largest) and (w > 0) == (n > 0) for w, (_, _, n) in zip(widths, summary.buckets)
        )


def test_the_card_links_every_picture_with_a_relative_image_link(twice):
    from markdown_it import MarkdownIt

    release = twice[0]
    card = (release / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", card)
    assert sorted(linked) == sorted(pictures(release))
    rendered = MarkdownIt("commonmark").enable("table").render(card.partition("\n---\n")[2])
    assert sorted(re.findall(r'<img src="([^"]*)"', rendered)) == sorted(linked)
    # The length picture stands just before its split's table.
    assert re.search(r"\]\(pictures/lengths-train\.svg\)\n\n\| tokens \| documents \| share \|", card)


def test_complete_json_lists_the_pictures_and_verify_refuses_an_altered_one(twice, tmp_path):
    import shutil

    listed = {f["path"] for f in json.loads((twice[0] / "COMPLETE.json").read_text())["files"]}
    assert set(pictures(twice[0])) <= listed
    copy = shutil.copytree(twice[0], tmp_path / "release")
    verify_release(copy)
    picture = copy / "pictures" / "lengths-train.svg"
    picture.write_bytes(picture.read_bytes().replace(b'width="320"', b'width="321"'))
    with pytest.raises(VerificationError, match=r"pictures/lengths-train\.svg"):
        verify_release(copy)


def test_a_build_with_a_source_column_draws_the_sources_beside_their_table(with_sources):
    assert sorted(pictures(with_sources)) == [
        "pictures/lengths-train.svg",
        "pictures/lengths-validation.svg",
        "pictures/sources-train.svg",
        "pictures/sources-validation.svg",
    ]
    stats = json.loads((with_sources / "stats.json").read_text())
    svg = ET.fromstring((with_sources / "pictures/sources-train.svg").read_bytes())
    texts = [t.text for t in svg.findall(f"{SVG}text")]
    train = {
        name: by_split["train"]["text_tokens"] for name, by_split in stats["sources"].items() if "train" in by_split
    }
    assert [t for t in texts if t in train] == sorted(train, key=lambda name: (-train[name], name))
    card = (with_sources / "README.md").read_text(encoding="utf-8")
    by_source, lengths = card.index("By source:"), card.index("## Document lengths")
    assert by_source < card.index("](pictures/sources-train.svg)") < lengths
    verify_release(with_sources)


def test_a_release_without_a_source_column_has_no_sources_picture(twice):
    assert not any("sources" in p for p in pictures(twice[0]))


def test_an_llmc_only_release_has_no_lengths_picture(llmc_bos):
    assert not (llmc_bos / "pictures").exists()
    assert "](pictures/" not in (llmc_bos / "README.md").read_text(encoding="utf-8")


def test_text_is_escaped_and_the_smallest_sources_are_one_bar():
    svg = bar_chart_svg("a & b", [("x<&>y", 3, "3 & more"), ("z", 0, "0")])
    root = ET.fromstring(svg)
    assert [t.text for t in root.findall(f"{SVG}text")] == ["a & b", "x<&>y", "3 & more", "z", "0"]
    assert [r.get("width") for r in root.findall(f"{SVG}rect")[1:]] == ["320", "0"]
    sources = {f"s{i:02d}": {"train": SplitCounts(1, 100 - i, 1, 0)} for i in range(30)}
    bars = source_bars(sources, "train")
    assert len(bars) == MAX_SOURCE_BARS and bars[0][0] == "s00"
    assert bars[-1][:2] == ("11 other sources", sum(100 - i for i in range(19, 30)))
