"""The documents say what the code does: every import, command line and path they show is checked.

The README and ``docs/*.md`` are read as a user reads them: a ``python`` block's
imports must import, every ``hf-tokbin ...`` line of a shell block must parse
with the real command line parser (nothing is run), and every module path or
dotted name of hf_tokbin they cite must exist. Claims about what the code
writes (a flag of the release card, the default split rule) are read where the
docs make them and compared with what the code writes.
"""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest

from hf_tokbin.cli import make_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(kinds: tuple[str, ...]):
    for doc in DOCS:
        for match in FENCE.finditer(doc.read_text(encoding="utf-8")):
            if match.group(1) in kinds:
                line = doc.read_text(encoding="utf-8")[: match.start()].count("\n") + 1
                yield f"{doc.name}:{line}", match.group(2)


def import_lines(code: str) -> list[str]:
    imports = (line.strip() for line in code.splitlines() if re.match(r"\s*(import \w|from [\w.]+ import )", line))
    return [line for line in imports if "hf_tokbin" in line]


def command_lines(code: str) -> list[str]:
    """The ``hf-tokbin`` invocations of a shell block.

    Continuations are joined, comments dropped, and lines split at ``&&``, ``|``, ``;``.
    """
    joined = re.sub(r"\\\n\s*", " ", code)
    found = []
    for line in joined.splitlines():
        words = [synopsis_word(w) for w in shlex.split(line, comments=True)]
        current: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "||", "|", ";"):
                if current and current[0] == "hf-tokbin":
                    found.append(current[1:])
                current = []
            else:
                current.append(word)
    return found


def synopsis_word(word: str) -> str:
    """A usage synopsis as one example: ``[--seq-len`` -> ``--seq-len``, ``llmc|megatron`` -> ``llmc``."""
    word = word.strip("[]")
    if re.fullmatch(r"[A-Z]", word):  # a number placeholder: --eod-id N, --download-sample K
        return "1"
    if re.fullmatch(r"[\w-]+(\|[\w-]+)+", word):
        return word.split("|")[0]
    return word


IMPORTS = [(where, line) for where, code in blocks(("python", "py")) for line in import_lines(code)]
SHELL = ("bash", "sh", "shell", "console")
COMMANDS = [(where, argv) for where, code in blocks(SHELL) for argv in command_lines(code)]


def test_the_documents_show_imports_and_commands():
    assert len(IMPORTS) >= 5 and len(COMMANDS) >= 20, (len(IMPORTS), len(COMMANDS))


@pytest.mark.parametrize("where,line", IMPORTS, ids=[f"{w}:{line}" for w, line in IMPORTS])
def test_every_documented_import_imports(where, line):
    exec(compile(line.replace("...", ""), where, "exec"), {})


@pytest.mark.parametrize("where,argv", COMMANDS, ids=[f"{w}:{' '.join(a)[:60]}" for w, a in COMMANDS])
def test_every_documented_command_line_parses(where, argv):
    parser = make_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as e:
        if argv in (["--help"], ["--version"]) or "--help" in argv or "-h" in argv:
            return
        raise AssertionError(f"{where}: `hf-tokbin {shlex.join(argv)}` does not parse (exit {e.code})") from None


# A path in the tree (not ~/.cache/hf_tokbin/...), a dotted name (not a record's format, hf_tokbin.run_config/2).
CITED_PATH = re.compile(r"(?<![\w/.~])hf_tokbin/[\w/.-]*\w")
CITED_NAME = re.compile(r"(?<![\w/.])hf_tokbin(?:\.[A-Za-z_]\w*)+(?![\w/])")


def cited(pattern: re.Pattern) -> list[tuple[str, str]]:
    return sorted({(doc.name, m.group(0)) for doc in DOCS for m in pattern.finditer(doc.read_text(encoding="utf-8"))})


@pytest.mark.parametrize("doc,path", cited(CITED_PATH))
def test_every_cited_module_path_exists(doc, path):
    assert (ROOT / path).exists() or (ROOT / f"{path}.py").exists(), f"{doc} cites {path}, which does not exist"


@pytest.mark.parametrize("doc,name", cited(CITED_NAME))
def test_every_cited_dotted_name_exists(doc, name):
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            assert hasattr(obj, attr), f"{doc} cites {name}: {'.'.join(parts[:cut])} has no {attr}"
            obj = getattr(obj, attr)
        return
    raise AssertionError(f"{doc} cites {name}, which does not import")


# Claims about what the code writes, read where the docs make them and checked against what the code writes.
CARD_FLAG = re.compile(r"`(viewer): (true|false)`")  # a flag of the release card's YAML metadata
DEFAULT_SPLIT_RULE = re.compile(r"\belse:? `?--split-rule (\w+)")  # "a split column ...; else --split-rule X"


def claims(pattern: re.Pattern) -> list[tuple[str, re.Match]]:
    return [(doc.name, m) for doc in DOCS for m in pattern.finditer(doc.read_text(encoding="utf-8"))]


def test_the_card_flags_the_docs_name_are_the_cards(tmp_path):
    import yaml
    from release_fixtures import build_release

    card = (build_release(tmp_path) / "README.md").read_text(encoding="utf-8")
    metadata = yaml.safe_load(card.split("---\n")[1])
    found = claims(CARD_FLAG)
    assert found, "the docs name no card flag: the pattern is stale"
    for doc, m in found:
        card_value = str(metadata[m.group(1)]).lower()
        assert card_value == m.group(2), f"{doc}: `{m.group(0)}`, the card says {card_value}"


def test_the_default_split_rule_the_docs_name_is_the_codes(tmp_path):
    import json

    from hf_tokbin.corpus.write import import_corpus

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"document {i}"}) + "\n" for i in range(20)))
    default = import_corpus([rows], tmp_path / "corpus").split_rule  # no split column, no option
    for doc, m in claims(DEFAULT_SPLIT_RULE):
        assert m.group(1) == default, f"{doc}: says the default split rule is {m.group(1)}; it is {default}"


# The commands the documents name in their prose, and the scripts they tell a reader to run.
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def inline_spans() -> list[tuple[str, str]]:
    """Every inline code span of the documents (fenced blocks left out), with the document's name."""
    found = []
    for doc in DOCS:
        text = FENCE.sub("", doc.read_text(encoding="utf-8"))
        found += [(doc.name, m.group(1)) for m in INLINE.finditer(text)]
    return found


def subparsers(parser) -> dict:
    """A parser's subcommands by name (``{}`` for a leaf)."""
    import argparse

    for action in parser._actions:  # argparse has no public way to list them
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def options_of(parser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def command_of(words: list[str]):
    """The (sub)parser a ``hf-tokbin a b ...`` span names and the path to it; (None, path) if a word is no command."""
    parser, path = make_parser(), []
    for word in words:
        if word.startswith("-") or not subparsers(parser):
            break
        if word not in subparsers(parser):
            return None, [*path, word]
        parser, path = subparsers(parser)[word], [*path, word]
    return parser, path


HF_TOKBIN_SPANS = [(doc, span) for doc, span in inline_spans() if span.startswith("hf-tokbin ")]


def test_the_documents_name_commands_in_their_prose():
    assert len(HF_TOKBIN_SPANS) >= 20, len(HF_TOKBIN_SPANS)


@pytest.mark.parametrize("doc,span", HF_TOKBIN_SPANS, ids=[f"{d}:{s[:60]}" for d, s in HF_TOKBIN_SPANS])
def test_every_command_named_in_prose_and_its_flags_exist(doc, span):
    words = span.split()[1:]
    parser, path = command_of(words)
    assert parser is not None, f"{doc}: `{span}`: hf-tokbin has no command `{' '.join(path)}`"
    if path:  # `hf-tokbin --version`, `hf-tokbin --help` name the top parser's own options
        flags = {w.split("=")[0] for w in words[len(path):] if re.fullmatch(r"--[a-z][\w-]*(=.*)?", w)}
        missing = flags - options_of(parser)
        assert not missing, f"{doc}: `{span}`: `hf-tokbin {' '.join(path)}` has no option {sorted(missing)}"


SCRIPT_CALL = re.compile(r"python3? (scripts/[\w.-]+\.py)((?: [^`\n&|;]*)?)")


def script_calls() -> list[tuple[str, str, list[str]]]:
    """Every ``python scripts/X.py --flag ...`` the documents show, in blocks or in prose: the script and its flags."""
    found = []
    for doc in DOCS:
        for m in SCRIPT_CALL.finditer(doc.read_text(encoding="utf-8")):
            flags = re.findall(r"(?<!\S)(--[a-z][\w-]*)", m.group(2))
            found.append((doc.name, m.group(1), flags))
    return found


SCRIPT_CALLS = script_calls()


def test_the_documents_show_the_benchmark_commands():
    assert len({script for _, script, _ in SCRIPT_CALLS}) >= 8, SCRIPT_CALLS


@pytest.mark.parametrize("doc,script,flags", SCRIPT_CALLS, ids=[f"{d}:{s}:{' '.join(f)}" for d, s, f in SCRIPT_CALLS])
def test_every_script_command_names_a_script_and_its_flags(doc, script, flags):
    path = ROOT / script
    assert path.is_file(), f"{doc}: runs {script}, which does not exist"
    source = path.read_text(encoding="utf-8")
    missing = [flag for flag in flags if f'"{flag}"' not in source]
    assert not missing, f"{doc}: runs {script} with {missing}, which its argument parser does not define"


# Documents stay true: what the software does, not how it came to be (that is git log's).
HISTORY = re.compile(
    r"\bseed 00\d|\b(?:issue|session|round) \d|\b\d{1,2} (?:January|February|March|April|May|June|July|August"
    r"|September|October|November|December) 20\d\d\b",
    re.I,
)


def test_the_documents_narrate_no_history_and_name_the_layouts():
    found = [
        f"{doc.name}:{number}: {m.group(0)!r}"
        for doc in DOCS
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        for m in HISTORY.finditer(line)
    ]
    assert not found, "the documents cite a spec by number, an issue, a session or a date: " + "; ".join(found)
