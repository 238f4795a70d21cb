"""What a command prints, and where: ``--json`` puts the summary on stdout as one JSON line, the rest on stderr.

As the ``hf`` CLI does: without ``--json`` the human summary goes to stdout;
with it, stdout holds exactly one JSON object (one line), so
``hf-tokbin verify R --json | jq .splits`` works, while progress bars (tqdm
writes to stderr) and messages go to stderr. An error is one object too,
``{"error": {"message", "path", "rule"}}`` (:func:`emit_error`), beside its line on stderr.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import PurePath

JSON_HELP = "print the summary as one JSON object on stdout, on one line (messages and progress on stderr)"


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true", help=JSON_HELP)


def say(args, text: str) -> None:
    """A message that is not the summary: stdout for a person, stderr under ``--json``."""
    print(text, file=sys.stderr if getattr(args, "json", False) else sys.stdout)


def emit(args, human: str, record) -> None:
    """The command's summary: ``human`` on stdout, or under ``--json`` ``record`` (a dict, a dataclass) as one JSON
    line."""
    if getattr(args, "json", False):
        print(json_line(record))
    else:
        print(human)


def emit_record(args, record) -> None:
    """Under ``--json``, ``record`` as stdout's one JSON line; nothing otherwise (the command printed its summary)."""
    if getattr(args, "json", False):
        print(json_line(record))


def json_line(record) -> str:
    """``record`` (:func:`as_json` makes it plain) as one line of JSON: never indented, whatever it holds."""
    return json.dumps(as_json(record), ensure_ascii=False, sort_keys=False)


def emit_error(args, error: BaseException, message: str) -> None:
    """Under ``--json``, the error as stdout's one JSON object: ``{"error": {"message", "path", "rule"}}``.

    ``message`` is the line printed on stderr (without the command's prefix); ``path`` and ``rule`` are the
    error's own fields (an OS error's file name and reason), ``path`` null where the error names no file.
    """
    if not getattr(args, "json", False):
        return
    path = getattr(error, "path", None) if hasattr(error, "rule") else getattr(error, "filename", None)
    rule = getattr(error, "rule", None) or getattr(error, "strerror", None) or message
    record = {"message": message, "path": None if path is None else os.fspath(path), "rule": rule}
    print(json.dumps({"error": record}, ensure_ascii=False))


def as_json(value):
    """``value`` as plain JSON types: paths as strings, tuples as lists.

    Dataclasses become dicts (through their ``to_dict`` where one exists).
    """
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return as_json(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, (PurePath, os.PathLike)):
        return os.fspath(value)
    return value
