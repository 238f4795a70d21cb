"""What both dataset cards share: their templates, the Hub's metadata vocabularies, and the one YAML emitter.

The YAML front matter of every card is written by PyYAML's safe emitter, never
by pasting text into a template: ``language: no`` (Norwegian) stays the
string ``"no"``, and no value can add a key or end the block.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path
from string import Template

import yaml

from .._io import read_json
from ..errors import FormatError

TEMPLATE_PACKAGE = "hf_tokbin.dataset_card"
RELEASE_TEMPLATE = "release_card.md"
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")  # the shape of a code, when datasets' list is not at hand

# The Hub's size_categories buckets, by number of documents.
_SIZE_BUCKETS = [
    (10**3, "n<1K"),
    (10**4, "1K<n<10K"),
    (10**5, "10K<n<100K"),
    (10**6, "100K<n<1M"),
    (10**7, "1M<n<10M"),
    (10**8, "10M<n<100M"),
    (10**9, "100M<n<1B"),
    (10**10, "1B<n<10B"),
    (10**11, "10B<n<100B"),
    (10**12, "100B<n<1T"),
]
# The Hub's license ids (https://huggingface.co/docs/hub/repositories-licenses; huggingface_hub carries no list).
# Any other value is written as the Hub's own escape, ``license: other`` with ``license_name``.
HUB_LICENSES = frozenset(
    """apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0
    bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc
    cc0-1.0 cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0
    cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0
    cdla-sharing-1.0 cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1
    eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc h-research intel-research lppl-1.3c
    ms-pl apple-ascl apple-amlr mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl
    lgpl-lr deepfloyd-if-license fair-noncommercial-research-license llama2 llama3 llama3.1 llama3.2 llama3.3
    llama4 gemma unknown other.split()""".split()
)


def size_category(documents: int) -> str:
    """The Hub ``size_categories`` bucket for a number of documents."""
    for bound, name in _SIZE_BUCKETS:
        if documents < bound:
            return name
    return "n>1T"


def load_template(name: str = RELEASE_TEMPLATE) -> Template:
    from importlib.resources import files

    # In a source checkout (pyproject.toml beside the package), the checkout's own templates: an editable install
    # maps hf_tokbin.dataset_card to the folder it was installed from, which may be another checkout.
    checkout = Path(__file__).resolve().parents[2]
    path = checkout / "dataset_card" / name
    if not ((checkout / "pyproject.toml").is_file() and path.is_file()):
        path = files(TEMPLATE_PACKAGE) / name
    if not path.is_file():
        raise FormatError(
            str(path),
            "dataset card template is missing",
            hint="reinstall hf_tokbin: the templates ship as hf_tokbin.dataset_card",
        )
    return Template(path.read_text(encoding="utf-8"))


class _CardDumper(yaml.SafeDumper):
    """PyYAML's safe dumper.

    A string holding a newline or a control character is written double-quoted, escaped, on one line."""


_CardDumper.add_representer(
    str,
    lambda dumper, value: dumper.represent_scalar(
        "tag:yaml.org,2002:str", value, style=None if value.isprintable() else '"'
    ),
)


def dump_yaml(obj) -> str:
    """``obj`` as YAML front matter text (no ``---`` lines), keys in their given order."""
    return yaml.dump(obj, Dumper=_CardDumper, sort_keys=False, allow_unicode=True, width=2**31)


@cache
def hub_language_codes() -> frozenset[str] | None:
    """The language codes the Hub's metadata accepts, as ``datasets`` ships them.

    The list is ``datasets/utils/resources/languages.json``.

    Found without importing ``datasets``; None when the file is not there (then a code is checked by its shape).
    """
    spec = importlib.util.find_spec("datasets")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "utils" / "resources" / "languages.json"
    return frozenset(read_json(path, FormatError, free_text=True)) if path.is_file() else None


def is_hub_language(code) -> bool:
    codes = hub_language_codes()
    return isinstance(code, str) and (
        code in codes if codes is not None else _LANGUAGE_CODE.fullmatch(code) is not None
    )


# The characters that open an inline element in CommonMark and GitHub's Markdown: a code span, emphasis, a link or an
# image, raw HTML or an autolink, an entity, strikethrough, a table cell, a heading; "_" only at a word's edge (inside
# a word, as in eos_token_id, it delimits no emphasis).
_MARKDOWN_ACTIVE = re.compile(r"([\\`*\[\]()<>!#&|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def markdown_text(text: str) -> str:
    """``text`` (a value from outside: a corpus name, a tokenizer id) as Markdown that renders as exactly ``text``.

    Each character that could open an element is backslash-escaped (CommonMark lets any ASCII punctuation be), so
    no value adds an image, a link, raw HTML or emphasis to a card.
    """
    return _MARKDOWN_ACTIVE.sub(r"\\\1", text)


def code_span(text: str) -> str:
    """``text`` as a Markdown code span that renders as exactly ``text``, whatever backticks it holds (a name may).

    CommonMark: fenced by one backtick more than the longest run inside, padded with a space where it starts or ends
    with one (the renderer strips one space from each end).
    """
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
