"""formats/rules.py: each shared value rule, and a scan of the package that fails when one is written again elsewhere.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import hf_tokbin
from hf_tokbin.formats.rules import (
    MAX_SOURCE_NAME_CHARS,
    UINT16_VOCAB_LIMIT,
    fits_uint16,
    id_dtype,
    is_folder_name,
    is_repo_id,
    is_source_name,
    split_name,
)

PACKAGE = Path(hf_tokbin.__file__).parent
# Where the rules live: rules.py, and ids.py for the one id range check (encode and every writer and reader call it).
HOMES = {PACKAGE / "formats" / "rules.py", PACKAGE / "formats" / "ids.py"}


@pytest.mark.parametrize(
    "value, ok",
    [
        ("ns/name", True),
        ("a/b", True),
        ("name", False),
        ("a/b/c", False),
        ("/b", False),
        ("a/", False),
        ("./b", False),
        ("a/..", False),
        ("a/.b", False),
        (None, False),
    ],
)
def test_a_repo_id_is_two_parts_neither_empty_nor_hidden(value, ok):
    assert is_repo_id(value) is ok


@pytest.mark.parametrize(
    "value, ok",
    [
        ("gpt2", True),
        ("tiny stories", True),
        ("", False),
        (".", False),
        ("..", False),
        (".hidden", False),
        ("a/b", False),
        ("a\\b", False),
        (" a", False),
        ("a ", False),
        ("a\nb", False),
        ("a\u202eb", False),
        (3, False),
    ],
)
def test_a_folder_name_is_one_plain_printable_component(value, ok):
    assert is_folder_name(value) is ok


@pytest.mark.parametrize(
    "value, ok",
    [
        ("web", True),
        ("wiki/fa", True),
        ("Persian Wikipedia", True),
        ("café.fr", True),
        ("x" * MAX_SOURCE_NAME_CHARS, True),
        ("x" * (MAX_SOURCE_NAME_CHARS + 1), False),
        ("", False),
        (" web", False),
        ("web\n", False),
        ("a\x1b[31m", False),
        ("a\u202eb", False),
        ("a|b", False),
        ("`x`", False),
        ("<b>", False),
        ("a\\b", False),
        (None, False),
        (3, False),
    ],
)
def test_a_source_name_is_a_short_printable_name_that_cannot_break_a_record_or_the_card(value, ok):
    assert is_source_name(value) is ok


def test_a_source_name_is_in_nfc_so_two_names_never_look_the_same_in_the_card():
    # "café" typed (NFC, é = U+00E9) and from a macOS file name (NFD, e + U+0301) would be two rows that read alike.
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert is_source_name(composed)
    assert not is_source_name(decomposed)


@pytest.mark.parametrize(
    "value, name",
    [
        ("train", "train"),
        ("validation", "validation"),
        ("val", "validation"),
        ("test", None),
        ("Train", None),
        (None, None),
    ],
)
def test_val_is_validation_and_nothing_else_is_a_split(value, name):
    assert split_name(value) == name


def test_ids_fit_16_bits_up_to_65536_ids():
    assert UINT16_VOCAB_LIMIT == 2**16
    assert (fits_uint16(65_536), fits_uint16(65_537)) == (True, False)
    assert (id_dtype(65_536), id_dtype(65_537)) == ("uint16", "uint32")


# -- the scan: each finder returns the lines of ``tree`` that write its rule again


def _split_alias_tables(tree: ast.AST) -> list[int]:
    """A dict literal mapping "val" to "validation"."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        and any(
            isinstance(k, ast.Constant)
            and k.value == "val"
            and isinstance(v, ast.Constant)
            and v.value == "validation"
            for k, v in zip(node.keys, node.values)
        )
    ]


def _uint16_limits(tree: ast.AST) -> list[int]:
    """The number 65,536 (the uint16/uint32 width) written in decimal, as code (docstrings and comments may name it).

    Hex 0x10000 is the first 4-byte UTF-8 code point, another rule.
    """
    decimal = lambda node: node.end_col_offset - node.col_offset <= len("65_536")  # noqa: E731
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value == 2**16 and decimal(node)
    ]


def _is_split_on_slash(node) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "split"
        and [ast.unparse(a) for a in node.args] == ["'/'"]
    )


def _split_on_slash_names(scope: ast.AST) -> set[str]:
    """The names ``scope`` assigns ``x.split("/")`` to (or ``x.split("/") if ... else ...``)."""
    names = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            value = node.value.body if isinstance(node.value, ast.IfExp) else node.value
            if _is_split_on_slash(value):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _repo_id_checks(tree: ast.AST) -> list[int]:
    """``len(x.split("/")) == 2``, or ``len(parts) == 2`` of a ``parts = x.split("/")`` in the same function."""
    found = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        split_names = _split_on_slash_names(scope)
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Call)
                and ast.unparse(node.left.func) == "len"
                and [ast.unparse(c) for c in node.comparators] == ["2"]
                and node.left.args
            ):
                arg = node.left.args[0]
                if _is_split_on_slash(arg) or isinstance(arg, ast.Name) and arg.id in split_names:
                    found.append(node.lineno)
    return sorted(set(found))


def _folder_name_checks(tree: ast.AST) -> list[int]:
    """One boolean expression testing ``startswith(".")`` and also '/' or '\\' in it, or ``isprintable()``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.BoolOp):
            continue
        parts = [ast.unparse(n) for n in ast.walk(node)]
        hidden = any(p.endswith(".startswith('.')") for p in parts)
        other = any(p.endswith(".isprintable()") for p in parts) or any(
            isinstance(n, ast.Compare) and isinstance(n.left, ast.Constant) and n.left.value in ("/", "\\")
            for n in ast.walk(node)
        )
        if hidden and other:
            found.append(node.lineno)
    return sorted(set(found))


def _vocabulary_checks(tree: ast.AST) -> list[int]:
    """An id range check by hand: ``x.max() >= vocab_size`` (or ``.min()``, either side, any comparison)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [ast.unparse(s) for s in (node.left, *node.comparators)]
            if any("vocab" in s for s in sides) and any(".max()" in s or ".min()" in s for s in sides):
                found.append(node.lineno)
    return found


FINDERS = {
    "val -> validation (rules.SPLIT_NAMES / split_name)": _split_alias_tables,
    "the uint16 width at 65,536 (rules.fits_uint16 / id_dtype)": _uint16_limits,
    "a Hub repo id (rules.is_repo_id)": _repo_id_checks,
    "a safe folder name (rules.is_folder_name)": _folder_name_checks,
    "ids against the vocabulary (ids.checked_ids / check_ids_below)": _vocabulary_checks,
}


def test_each_shared_rule_is_written_once_in_formats_rules():
    repeats = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in HOMES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for rule, finder in FINDERS.items():
            repeats += [f"{path.relative_to(PACKAGE.parent)}:{line}: {rule}" for line in finder(tree)]
    assert repeats == [], "a rule of formats/rules.py written again:\n" + "\n".join(repeats)


# The spellings the package held before rules.py, one per rule: the scan must find each (so the test above can fail).
OLD_SPELLINGS = {
    _split_alias_tables: 'SPLIT_VALUES = {"train": "train", "validation": "validation", "val": "validation"}',
    _uint16_limits: "dtype = np.uint16 if vocab_size <= 65536 else np.uint32",
    _repo_id_checks: """
        def _check_repo_args(repo_id):
            parts = repo_id.split("/") if isinstance(repo_id, str) else []
            if len(parts) != 2 or not all(parts):
                raise HubError(None, "repo id must be NAMESPACE/NAME", got=repo_id)
        """,
    _folder_name_checks: (
        'bad = not isinstance(name, str) or not name or "/" in name or '
        '"\\\\" in name or name.startswith(".") or name.strip() != name'
    ),
    _vocabulary_checks: "if flat.size and int(flat.max()) >= self.vocab_size: raise BuildError(None, 'out of range')",
}


@pytest.mark.parametrize("finder", list(OLD_SPELLINGS), ids=lambda f: f.__name__)
def test_the_scan_finds_the_old_spellings(finder):
    assert finder(ast.parse(textwrap.dedent(OLD_SPELLINGS[finder]))) != []


def test_the_scan_lets_unrelated_code_through():
    unrelated = """
        if len(pair) == 2 and all(isinstance(v, int) for v in pair): pass
        hidden = [d for d in dirs if not d.startswith(".")]
        total = lengths.max() + 1
        LLMC_SPLIT = {"train": "train", "validation": "val"}
        """
    assert [finder(ast.parse(textwrap.dedent(unrelated))) for finder in FINDERS.values()] == [[]] * len(FINDERS)
