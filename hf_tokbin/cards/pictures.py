"""The card's pictures: SVG bar charts of each split's document lengths and, with a source column, its sources.

::

    DIR/pictures/lengths-train.svg, DIR/pictures/lengths-validation.svg   a split with Megatron pairs and documents
    DIR/pictures/sources-train.svg, DIR/pictures/sources-validation.svg   a build with --source-column

A lengths picture draws :mod:`hf_tokbin.formats.lengths`' buckets, the rows of
the card's length table: one bar per power-of-two bucket. A sources picture
draws each source's share of the split's text tokens (``stats.json``): the
largest :data:`MAX_SOURCE_BARS` sources, then one bar for the rest.

The SVG is written as text by this module: no plotting package, no timestamp,
no random id, integer coordinates, fixed number formats. The same release
gives the same bytes on every machine. ``COMPLETE.json`` lists the pictures with
their SHA-256, as it lists the card; the card links them with relative Markdown
image links (:func:`picture_link`).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from .._io import atomic_open
from ..formats.lengths import LengthSummary, length_summaries
from ..formats.release import PICTURES_DIR, SPLITS, STATS_NAME, Receipt, SplitCounts, Stats

MAX_SOURCE_BARS = 20  # the largest sources drawn one by one; the rest are one bar
MAX_LABEL_CHARS = 32  # a longer source name is cut, ending in "..."

# The drawing, in pixels. A monospace glyph of FONT_SIZE px is about 0.6 em wide: CHAR_WIDTH leaves room.
FONT_SIZE = 12
CHAR_WIDTH = 8
ROW_HEIGHT = 20
BAR_HEIGHT = 14
TITLE_HEIGHT = 30
MARGIN = 10
GAP = 8
BAR_LENGTH = 320  # the longest bar
BAR_COLOR = "#4878d0"
TEXT_COLOR = "#222222"
BACKGROUND = "#ffffff"  # drawn: the Hub's dark theme would otherwise show dark text on a dark page


def lengths_picture(split: str) -> str:
    return f"{PICTURES_DIR}/lengths-{split}.svg"


def sources_picture(split: str) -> str:
    return f"{PICTURES_DIR}/sources-{split}.svg"


def bar_chart_svg(title: str, bars: list[tuple[str, int, str]]) -> str:
    """An SVG of horizontal bars: per ``(label, value, note)`` the label, a bar as long as its value (the largest
    value's bar :data:`BAR_LENGTH` px) and the note after it. Text is escaped; every number is an integer."""
    largest = max((value for _, value, _ in bars), default=0)
    bar_x = MARGIN + CHAR_WIDTH * max((len(label) for label, _, _ in bars), default=0) + GAP
    note_chars = max((len(note) for _, _, note in bars), default=0)
    width = max(bar_x + BAR_LENGTH + GAP + CHAR_WIDTH * note_chars, CHAR_WIDTH * len(title)) + MARGIN
    height = TITLE_HEIGHT + ROW_HEIGHT * len(bars) + MARGIN
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' font-family="monospace" font-size="{FONT_SIZE}" fill="{TEXT_COLOR}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="{BACKGROUND}"/>',
        f'<text x="{MARGIN}" y="{TITLE_HEIGHT - 12}" font-weight="bold">{escape(title)}</text>',
    ]
    for row, (label, value, note) in enumerate(bars):
        top = TITLE_HEIGHT + ROW_HEIGHT * row
        length = (BAR_LENGTH * value + largest // 2) // largest if largest else 0
        length = max(length, 1) if value else 0  # a bucket with documents is never drawn empty
        baseline = top + BAR_HEIGHT - 2
        lines += [
            f'<text x="{bar_x - GAP}" y="{baseline}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{bar_x}" y="{top + (ROW_HEIGHT - BAR_HEIGHT) // 2}" width="{length}" height="{BAR_HEIGHT}"'
            f' fill="{BAR_COLOR}"/>',
            f'<text x="{bar_x + length + GAP}" y="{baseline}">{escape(note)}</text>',
        ]
    return "\n".join([*lines, "</svg>", ""])


def length_bars(summary: LengthSummary) -> list[tuple[str, int, str]]:
    """The bars of a split's lengths picture: one per bucket of the card's table, its documents and share."""
    return [
        (f"{low:,}–{high:,}", n, f"{n:,} ({100 * n / summary.documents:.1f}%)") for low, high, n in summary.buckets
    ]


def source_bars(sources: dict[str, dict[str, SplitCounts]], split: str) -> list[tuple[str, int, str]]:
    """The bars of a split's sources picture: each source's text tokens and share, largest first, the rest as one."""
    tokens = {name: by_split[split].text_tokens for name, by_split in sources.items() if split in by_split}
    total = sum(tokens.values())
    order = sorted(tokens, key=lambda name: (-tokens[name], name))
    shown = order if len(order) <= MAX_SOURCE_BARS else order[: MAX_SOURCE_BARS - 1]
    rows = [(_label(name), tokens[name]) for name in shown]
    if len(shown) < len(order):
        rows.append((f"{len(order) - len(shown):,} other sources", sum(tokens[name] for name in order[len(shown) :])))
    return [(label, n, f"{n:,} ({100 * n / total if total else 0:.1f}%)") for label, n in rows]


def _label(name: str) -> str:
    return name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 3] + "..."


def write_pictures(root: Path, receipts: list[Receipt], by_source: bool) -> list[str]:
    """Write the release's pictures into ``root`` (which holds the ``.idx`` files and ``stats.json``); their paths,
    relative to ``root``. ``by_source``: the build counted by source (a source column)."""
    root = Path(root)
    pictures = {
        lengths_picture(split): bar_chart_svg(f"{split}: documents by length in tokens", length_bars(summary))
        for split, summary in length_summaries(root, receipts).items()
    }
    if by_source:
        sources = Stats.read(root / STATS_NAME).sources
        for split in SPLITS:
            bars = source_bars(sources, split)
            if bars:
                pictures[sources_picture(split)] = bar_chart_svg(f"{split}: text tokens by source", bars)
    for rel, svg in pictures.items():
        with atomic_open(root / rel) as file:
            file.write(svg.encode("utf-8"))
    return sorted(pictures)


def picture_link(root: Path, rel: str, alt: str) -> str:
    """The Markdown image of the picture ``rel``, relative to the card, when the release holds it; else ""."""
    return f"![{alt}]({rel})" if (Path(root) / rel).is_file() else ""


def picture_rows(root: Path) -> list[list[str]]:
    """The card's files-table row for the pictures, when the release holds any."""
    files = sorted((Path(root) / PICTURES_DIR).glob("*.svg"))
    if not files:
        return []
    what = "the card's charts: document lengths per split and, with a source column, tokens by source"
    size = sum(f.stat().st_size for f in files)
    return [[f"`{PICTURES_DIR}/*.svg`", what, f"{len(files):,}", f"{size:,}"]]
