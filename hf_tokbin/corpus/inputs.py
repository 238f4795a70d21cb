"""Raw corpus inputs: which files a list of paths names, and
their rows as Arrow tables through ``datasets``' own readers.

Accepted (each optionally compressed ``.gz``, ``.zst``, ``.bz2`` or ``.xz``;
fsspec decompresses on the fly, as ``datasets`` does):

- ``.jsonl`` / ``.json``: JSON Lines, or a top-level array of objects
  (``datasets``' ``json`` builder);
- ``.parquet`` (the ``parquet`` builder), ``.arrow`` (the ``arrow`` builder);
- ``.txt``: one document per line, as ``datasets``' ``text`` builder reads it;
- a folder (searched recursively, sorted by relative path; names starting
  with ``.`` or ``_`` skipped, so a corpus folder can itself be imported);
- a glob (``shards/*.jsonl.gz``), expanded and sorted by path;
- an ``hf://datasets/NS/NAME/...`` file, folder or glob (``HfFileSystem``'s
  paths and globs, listed by the bounded tree listing);
- a ``Dataset.save_to_disk`` folder (``state.json``: its Arrow files) or a
  ``DatasetDict.save_to_disk`` folder (``dataset_dict.json``: each split's
  files, the split name given to every row, see :attr:`InputFile.split`).

``datasets`` reads; hf_tokbin checks. Every table is checked column by
column (:mod:`.builders.corpus_shards`); when a reader itself fails (invalid
JSON or UTF-8, an integer past Python's digit limit, nesting past the parser's
depth) the file is scanned again by :func:`locate_json_error`, which names the
line, so the user gets ``FILE: line N: RULE``, never a traceback. A JSON row
number is turned into its line number the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import io
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa

from ..errors import CorpusInputError
from ..formats.rules import is_folder_name, is_repo_id

COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2", ".xz": "xz"}
READERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".arrow": "arrow", ".txt": "text"}
HF_PREFIX = "hf://"
_GLOB_CHARS = ("*", "?", "[")


@dataclass(frozen=True)
class InputFile:
    """One input file: where it is, its name in the manifest, its reader and, for a DatasetDict folder, its split."""

    uri: str  # a local path or an hf:// URL
    name: str  # the source name recorded in the corpus manifest
    reader: str  # json, parquet, arrow or text
    split: str | None = None  # the split its container names (DatasetDict split), else None
    size: int | None = None  # listed size and SHA-256 (a Hub file: the Hub's listing), else computed from the bytes
    sha256: str | None = None
    git_blob_id: str | None = None  # a Hub file kept in git, not LFS: its listed blob id
    local: str | None = None  # a remote file's checked local copy, where its bytes are read (see fetched_copy)

    @property
    def is_remote(self) -> bool:
        return self.uri.startswith(HF_PREFIX)

    @property
    def readable(self) -> str:
        """Where the bytes are read: the checked local copy of a remote file, else the file itself."""
        return self.local or self.uri


@contextlib.contextmanager
def fetched_copy(file: InputFile, folder: Path) -> Iterator[InputFile]:
    """``file`` to read: a remote file fetched into ``folder`` by the checked download (its listed size and digest)
    while the context lasts, with its SHA-256 as read; a local file as it is. Messages still name ``file.uri``."""
    if not file.is_remote:
        yield file
        return
    from .._io import sha256_file
    from .hub_source import fetch_hub_file

    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".input-", dir=folder))
    try:
        local = fetch_hub_file(file.uri, file.size, file.sha256, file.git_blob_id, scratch)
        yield dataclasses.replace(file, sha256=sha256_file(local), local=os.fspath(local))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def reader_of(name: str) -> tuple[str | None, str | None]:
    """``(reader, compression)`` from a file name's suffixes; reader None if it is not an input file."""
    lower = name.lower()
    compression = None
    for suffix, codec in COMPRESSIONS.items():
        if lower.endswith(suffix):
            compression, lower = codec, lower[: -len(suffix)]
            break
    for suffix, reader in READERS.items():
        if lower.endswith(suffix):
            return reader, compression
    return None, compression


def _accepted() -> str:
    return ", ".join(READERS) + " (each optionally " + ", ".join(COMPRESSIONS) + ")"


def list_inputs(paths: Sequence[str | os.PathLike]) -> list[InputFile]:
    """Every input file the arguments name, in order: files as given, folders and globs sorted by path."""
    if not paths:
        raise CorpusInputError(
            None, "no input given", expected="files, folders or globs of " + _accepted(), got="nothing"
        )
    found: list[InputFile] = []
    for given in paths:
        if isinstance(given, InputFile):  # already resolved (a corpus's own shards, see corpus.subset)
            found.append(given)
            continue
        text = os.fspath(given)
        if text.startswith(HF_PREFIX):
            found.extend(_hub_inputs(text))
        elif _looks_like_repo_id(text):
            from ..hub.retry import path_or_repo

            with path_or_repo(text):
                found.extend(_hub_repo_inputs(text))
        elif Path(text).is_dir():
            found.extend(_folder_inputs(Path(text)))
        elif any(c in text for c in _GLOB_CHARS) and not Path(text).exists():
            matches = sorted(glob.glob(text, recursive=True))
            files = [Path(m) for m in matches if Path(m).is_file() and reader_of(m)[0]]
            if not files:
                raise CorpusInputError(
                    text, "glob matches no input files", expected=_accepted(), got=f"{len(matches)} matches"
                )
            found.extend(InputFile(os.fspath(p), p.name, reader_of(p.name)[0]) for p in files)
        else:
            found.append(_single_file(Path(text)))
    return found


def _single_file(path: Path) -> InputFile:
    if not path.is_file():
        raise CorpusInputError(path, "input file is missing" if not path.exists() else "input is not a file")
    reader, _ = reader_of(path.name)
    if reader is None:
        raise CorpusInputError(
            path, "unknown input file type", expected=_accepted(), got="".join(path.suffixes[-2:]) or "no suffix"
        )
    return InputFile(os.fspath(path), path.name, reader)


def is_saved_dataset_folder(folder: Path) -> bool:
    """Whether ``folder`` was written by ``Dataset.save_to_disk``
    (``state.json``) or ``DatasetDict.save_to_disk`` (``dataset_dict.json``).
    """
    return (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file()


def is_hidden(parts) -> bool:
    """Whether a path inside a folder input is left out: a part
    starting with ``.`` or ``_`` (a corpus folder's own records).
    """
    return any(part.startswith((".", "_")) for part in parts)


def _folder_inputs(folder: Path) -> list[InputFile]:
    if is_saved_dataset_folder(folder):
        return _saved_dataset_inputs(folder)
    inside = sorted(
        (p for p in folder.rglob("*") if p.is_file() and reader_of(p.name)[0]),
        key=lambda p: p.relative_to(folder).as_posix(),
    )
    inside = [p for p in inside if not is_hidden(p.relative_to(folder).parts)]
    if not inside:
        raise CorpusInputError(folder, "folder holds no input files", expected=_accepted(), got="none")
    base = Path(folder.resolve().name)
    return [InputFile(os.fspath(p), (base / p.relative_to(folder)).as_posix(), reader_of(p.name)[0]) for p in inside]


def _saved_dataset_inputs(folder: Path) -> list[InputFile]:
    """The Arrow files of a ``save_to_disk`` folder, in the order ``load_from_disk`` reads them."""
    from .._io import read_json

    base = Path(folder.resolve().name)
    if (folder / "dataset_dict.json").is_file():
        splits = read_json(folder / "dataset_dict.json", CorpusInputError, free_text=True).get("splits")
        if not isinstance(splits, list) or not all(map(is_folder_name, splits)):
            raise CorpusInputError(folder / "dataset_dict.json", "splits must be a list of split names", got=splits)
        return [
            InputFile(f.uri, f.name, f.reader, split)
            for split in splits
            for f in _saved_dataset_inputs(folder / split)
        ]
    state = read_json(folder / "state.json", CorpusInputError, free_text=True)
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not files:
        raise CorpusInputError(
            folder / "state.json", "a save_to_disk folder lists its Arrow files in _data_files", got=files
        )
    found = []
    for entry in files:
        name = entry.get("filename") if isinstance(entry, dict) else None
        if not is_folder_name(name) or not name.endswith(".arrow"):
            raise CorpusInputError(
                folder / "state.json", "_data_files: a file name inside the folder ending in .arrow", got=repr(name)
            )
        path = folder / name
        if not path.is_file():
            raise CorpusInputError(path, "Arrow file listed in state.json is missing")
        found.append(InputFile(os.fspath(path), (base / name).as_posix(), "arrow"))
    _check_saved_arrow_files(folder, [Path(f.uri) for f in found])
    return found


def _check_saved_arrow_files(folder: Path, paths: list[Path]) -> None:
    """Each Arrow file of a ``save_to_disk`` folder is one whole Arrow stream, and ``dataset_info.json``'s features
    (when it has them) describe its columns: what datasets would otherwise fail on deep inside its readers."""
    import pyarrow as pa

    schema = None
    for path in paths:
        try:
            with pa.memory_map(os.fspath(path)) as source:
                reader = pa.ipc.open_stream(source)
                for _ in reader:  # every batch: a truncated file ends inside one
                    pass
                schema = reader.schema
        except (pa.ArrowInvalid, OSError) as e:
            rule = "a save_to_disk folder's Arrow file must be one whole Arrow stream (truncated, or not Arrow)"
            raise CorpusInputError(path, rule, got=_first_line(e)) from None
    info = folder / "dataset_info.json"
    features = _saved_features(info) if info.is_file() else None
    if features is not None and schema is not None and not features.equals(schema, check_metadata=False):
        rule = "a save_to_disk folder's features (dataset_info.json) must describe the columns of its Arrow files"
        raise CorpusInputError(info, rule, expected=_columns_text(schema), got=_columns_text(features))


def _saved_features(info: Path):
    """The Arrow schema of ``dataset_info.json``'s features, or None when it names none."""
    import datasets

    from .._io import read_json

    features = read_json(info, CorpusInputError, free_text=True).get("features")
    if features is None:
        return None
    try:
        return datasets.Features.from_dict(features).arrow_schema
    except Exception as e:  # noqa: BLE001 - datasets' errors on a malformed features object vary
        raise CorpusInputError(info, "features must be a datasets Features object", got=_first_line(e)) from None


def _first_line(error: Exception) -> str:
    """An error's first line, cut to 200 characters: what a library says about a damaged file."""
    return (str(error).splitlines() or [type(error).__name__])[0][:200]


def _columns_text(schema) -> str:
    return ", ".join(f"{field.name}: {field.type}" for field in schema)


def load_saved_dataset(folder: Path):
    """A ``save_to_disk`` folder as a ``Dataset`` or ``DatasetDict``, read from its checked Arrow files alone.

    Not ``datasets.load_from_disk``: that also applies the format the folder was saved with (``_format_type``:
    torch, jax, ...), which needs that library and changes nothing hf_tokbin reads (Arrow).
    """
    import datasets

    by_split: dict = {}
    for file in _saved_dataset_inputs(folder):
        by_split.setdefault(file.split, []).append(datasets.Dataset.from_file(file.uri))
    members = {split: datasets.concatenate_datasets(parts) for split, parts in by_split.items()}
    return members[None] if None in members else datasets.DatasetDict(members)


def _looks_like_repo_id(text: str) -> bool:
    return (
        not Path(text).exists()
        and is_repo_id(text)
        and reader_of(text)[0] is None
        and not any(c in text for c in _GLOB_CHARS)
    )


def _hub_repo_inputs(repo_id: str) -> list[InputFile]:
    """A whole Hub dataset repo at its current commit: its data files per split, as ``load_dataset`` finds them."""
    from huggingface_hub import HfApi

    from ..errors import TokbinError
    from ..hub.retry import fetch_error
    from ..hub.revision import escaped, resolve_commit
    from .hub_source import data_files_by_split, hub_listing, listed_digests

    try:
        commit = resolve_commit(HfApi(), repo_id, None, "dataset")
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001 - no such repo, no access, unreachable: one line
        raise escaped(fetch_error(f"{repo_id}@main", "corpus input", e)) from e
    _commit, listing = hub_listing(repo_id, commit)
    with tempfile.TemporaryDirectory(prefix="hf-tokbin-card-") as records:
        by_split = data_files_by_split(repo_id, commit, listing, None, Path(records))
    found = []
    for split, paths in by_split.items():
        for path in paths:
            reader = reader_of(path)[0]
            if reader is None:
                raise CorpusInputError(
                    f"{repo_id}@{commit}/{path}",
                    "unknown input file type",
                    expected=_accepted(),
                    got=os.path.splitext(path)[1] or "no suffix",
                )
            digests = listed_digests(listing[path])  # hub_splits: every data file is one of the listing's
            found.append(InputFile(f"{HF_PREFIX}datasets/{repo_id}@{commit}/{path}", path, reader, split, *digests))
    if not found:
        raise CorpusInputError(f"{repo_id}@{commit}", "the dataset has no data files")
    return found


def _hub_url_at_commit(api, url: str):
    """``(the parts of an hf:// URL, the commit its revision names)``: the URL parsed without a request
    (``HfFileSystem.resolve_path`` asked for the repo's info, bounded in neither bytes nor time), the revision resolved
    by the bounded request; no such repo or revision is one line saying which."""
    from ..errors import TokbinError
    from ..hub.retry import fetch_error
    from ..hub.revision import escaped, resolve_commit
    from .hub_source import parse_hub_url

    resolved = parse_hub_url(url)
    try:
        return resolved, resolve_commit(api, resolved.id, resolved.revision, resolved.type)
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001 - no such repo or revision, no access, unreachable
        raise escaped(fetch_error(url, "corpus input", e)) from e


def _hub_glob(path: str, files_under) -> dict:
    """The files a glob of repo paths matches (fsspec's rules, as ``HfFileSystem.glob``), by path, from the listing
    of the folder before its first wildcard: the folder's own entries when the rest is one component (fsspec's glob
    lists a depth of one), else every file under it (``files_under(folder, recursive)``)."""
    from fsspec.utils import glob_translate
    from huggingface_hub.hf_api import RepoFile

    folder = path[: min(path.find(c) for c in _GLOB_CHARS if c in path)].rpartition("/")[0]
    rest = path[len(folder) + 1 :] if folder else path
    matches = re.compile(glob_translate(path)).match
    return {
        e.path: e
        for e in files_under(folder, "/" in rest or "**" in rest)
        if isinstance(e, RepoFile) and matches(e.path)
    }


def _hub_found(path: str, files_under) -> dict:
    """The listed files of ``path`` in its repo (a glob, a file, a folder or the repo), by path."""
    from huggingface_hub.hf_api import RepoFile

    if any(c in path for c in _GLOB_CHARS):
        return _hub_glob(path, files_under)
    entry = next((e for e in files_under(path.rpartition("/")[0], False) if e.path == path), None) if path else None
    if path and entry is None:
        raise FileNotFoundError(path)
    if isinstance(entry, RepoFile):
        return {path: entry}
    return {  # a folder (or the repo): its files, but hidden ones
        e.path: e
        for e in files_under(path, True)
        if isinstance(e, RepoFile) and not is_hidden(e.path[len(path) :].split("/"))
    }


def _hub_inputs(url: str) -> list[InputFile]:
    """Files under an ``hf://`` URL (a file, a folder or a glob), sorted by path, at the commit its revision names.

    The repo's files come from the bounded tree listing at the checked commit
    (:func:`hf_tokbin.hub.revision.bounded_listing`: bounded in entries, bytes and
    time, next pages on the endpoint only), not from ``HfFileSystem``'s, which
    has none of those bounds. A glob matches as ``HfFileSystem.glob`` does
    (fsspec's rules: ``*`` within a path component, ``**`` across them); a
    folder gives its files but those under a component starting with ``.`` or
    ``_``.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.constants import REPO_TYPES_URL_PREFIXES
    from huggingface_hub.errors import EntryNotFoundError

    from ..errors import TokbinError, shown
    from ..hub.retry import RetryPolicy, call_with_retry
    from ..hub.revision import bounded_listing
    from .hub_source import listed_digests

    api = HfApi()
    try:
        resolved, commit = _hub_url_at_commit(api, url)
        repo = f"{REPO_TYPES_URL_PREFIXES.get(resolved.type, '')}{resolved.id}@{commit}"  # a model's has no prefix
        url, path = f"{HF_PREFIX}{repo}/{resolved.path_in_repo}".rstrip("/"), resolved.path_in_repo.strip("/")

        def files_under(folder: str, recursive: bool) -> list:
            def listing():
                return bounded_listing(
                    api, resolved.id, url, repo_type=resolved.type, revision=commit, recursive=recursive,
                    path_in_repo=folder or None,
                )

            return call_with_retry(RetryPolicy.from_env(), "list the Hub path", listing)

        found = _hub_found(path, files_under)
        names = sorted(found)
    except TokbinError:
        raise
    except (FileNotFoundError, EntryNotFoundError):
        raise CorpusInputError(url, "input file is missing on the Hub") from None
    except Exception as e:  # the Hub client's errors: no such repo, no access, unreachable
        raise CorpusInputError(
            url, "cannot list the Hub path",
            got=shown(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"),
        ) from None
    files = [n for n in names if reader_of(n)[0]]
    if not files:
        raise CorpusInputError(
            url, "no input files at this Hub path", expected=_accepted(), got=f"{len(names)} other files"
        )
    # a dataset's files are named by their path in it (as before: a model's keep the repo)
    named = repo.startswith("datasets/")
    return [
        InputFile(
            f"{HF_PREFIX}{repo}/{n}", n if named else f"{repo}/{n}", reader_of(n)[0], None, *listed_digests(found[n])
        )
        for n in files
    ]


# Reading ---------------------------------------------------------------------------------------


def _builder(file: InputFile, cache_dir: str, columns: list[str] | None):
    """``datasets``' packaged builder for one file, configured to change no value."""
    from datasets.data_files import DataFilesDict, DataFilesList

    data_files = DataFilesDict({"input": DataFilesList([file.readable], [()])})
    if file.reader == "json":
        from datasets.packaged_modules.json.json import Json

        # on_mixed_types=None: a column holding strings and numbers is an error, never re-encoded as JSON text.
        return Json(cache_dir=cache_dir, data_files=data_files, on_mixed_types=None, parse_agent_traces=False)
    if file.reader == "parquet":
        from datasets.packaged_modules.parquet.parquet import Parquet

        return Parquet(cache_dir=cache_dir, data_files=data_files, columns=columns)
    if file.reader == "arrow":
        from datasets.packaged_modules.arrow.arrow import Arrow

        return Arrow(cache_dir=cache_dir, data_files=data_files)
    from datasets.packaged_modules.text.text import Text

    return Text(cache_dir=cache_dir, data_files=data_files, keep_linebreaks=False)


def read_tables(file: InputFile, cache_dir: str, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """The rows of one input file as Arrow tables, in file order, each value as the reader found it (no casts)."""
    from .private_apis import generate_tables, split_generators

    if file.reader == "parquet":
        _check_parquet_schema(file)
    if file.reader == "json":
        check_json_depth(file)
    builder = _builder(file, cache_dir, columns)
    try:
        generators = split_generators(builder)
        builder.info.features = None  # the json builder inferred them from the first block: no cast of later blocks
        yield from generate_tables(builder, generators[0])
    except CorpusInputError:
        raise
    except Exception as e:  # noqa: BLE001 - any reader failure becomes one line naming the file (and line)
        raise reader_error(file, e) from None


MAX_JSON_DEPTH = 256  # pyarrow's JSON parser crashes the process (SIGSEGV) somewhere past 5,000 levels
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes included (unrolled: linear)
_DEPTH_BLOCK = 8 << 20


def check_json_depth(file: InputFile) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH` before any parser sees it (one pass, C speed).

    Strings are blanked out first (a ``[`` inside a string is text), then the
    running depth of ``[``/``{`` against ``]``/``}`` is taken over the
    brackets only. Blocks end at a line end, so JSON Lines rows are whole.
    """
    import numpy as np

    line = 1
    depth = 0
    with open_binary(file.readable) as handle:
        while True:
            block = handle.read(_DEPTH_BLOCK)
            if not block:
                return
            block += handle.readline()
            bare = np.frombuffer(_JSON_STRING.sub(b'""', block), dtype=np.uint8)
            where = np.flatnonzero((bare == 0x5B) | (bare == 0x7B) | (bare == 0x5D) | (bare == 0x7D))
            if where.size:
                step = np.where((bare[where] == 0x5B) | (bare[where] == 0x7B), 1, -1).astype(np.int64)
                running = depth + np.cumsum(step)
                deepest = int(np.argmax(running))
                if running[deepest] > MAX_JSON_DEPTH:
                    first = int(np.argmax(running > MAX_JSON_DEPTH))
                    at = line + int(np.count_nonzero(bare[: where[first]] == 0x0A))
                    raise CorpusInputError(
                        file.uri,
                        f"line {at}: JSON nested too deeply",
                        expected=f"at most {MAX_JSON_DEPTH} levels of arrays and objects",
                        got="deeper nesting",
                    )
                depth = int(running[-1])
            line += int(np.count_nonzero(bare == 0x0A))


def _check_parquet_schema(file: InputFile) -> None:
    """A Parquet file with two columns of the same name cannot be read by name: say so, not a traceback."""
    import fsspec
    import pyarrow.parquet as pq

    try:
        with fsspec.open(file.readable, "rb") as handle:
            names = pq.ParquetFile(handle).schema_arrow.names
    except (pa.ArrowException, OSError) as e:
        raise CorpusInputError(
            file.uri, "not a readable Parquet file", expected="a Parquet file", got=_first_line(e)
        ) from None
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CorpusInputError(
            file.uri, "two columns have the same name", expected="distinct column names", got=duplicates
        )


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:300]


def reader_error(file: InputFile, e: BaseException) -> CorpusInputError:
    """A reader's failure as one line: for JSON, the first line that breaks a rule, found by scanning the file again.
    """
    if file.reader == "json":
        located = locate_json_error(file)
        if located is not None:
            return located
    if file.reader == "text" and isinstance(e, UnicodeDecodeError):
        return CorpusInputError(
            file.uri,
            "invalid UTF-8",
            expected="UTF-8 text",
            got=f"byte {e.object[e.start]:#04x} in a block of the file",
        )
    rule = {"parquet": "not a readable Parquet file", "arrow": "not a readable Arrow file"}.get(
        file.reader, f"cannot read this {file.reader} file"
    )
    return CorpusInputError(file.uri, rule, got=f"{type(e).__name__}: {_first_line(e)}")


def open_binary(uri: str):
    """A binary file object over ``uri``, decompressed by its suffix (fsspec), local or ``hf://``."""
    import fsspec

    _, compression = reader_of(uri)
    handle = fsspec.open(uri, "rb", compression=compression).open()
    try:
        handle.readline(0)
    except (io.UnsupportedOperation, AttributeError):  # zstandard's reader reads blocks only: buffer it for lines
        handle = io.BufferedReader(handle)
    return handle


def json_lines(file: InputFile) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of a JSON Lines file, blank lines included (line numbers as an editor shows)."""
    with open_binary(file.readable) as handle:
        for number, raw in enumerate(handle, start=1):
            yield number, raw


def locate_json_error(file: InputFile, row_problem=None) -> CorpusInputError | None:
    """The first line of a JSON file that breaks a rule: UTF-8, one JSON object, then ``row_problem(object)``.

    A file starting with ``[`` is one JSON array: its error names the file and the row.
    """
    with open_binary(file.readable) as handle:
        head = handle.read(64).lstrip()
    if head.startswith(b"["):
        return _json_document_error(file, row_problem)
    offset = 0
    for number, raw in json_lines(file):
        where = f"line {number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return CorpusInputError(
                file.uri,
                "invalid UTF-8",
                expected="UTF-8 text",
                got=f"byte {raw[e.start]:#04x} at byte offset {offset + e.start} ({where})",
            )
        offset += len(raw)
        if not line.strip():
            continue
        rows, problem = parse_json(line.lstrip("\ufeff") if number == 1 else line)
        if problem is None and row_problem is not None:
            problem = row_problem(rows[0])
        if problem is not None:
            return CorpusInputError(file.uri, f"{where}: {problem[0]}", expected=problem[1], got=problem[2])
    return None


def _json_document_error(file: InputFile, row_problem) -> CorpusInputError | None:
    with open_binary(file.readable) as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return CorpusInputError(
            file.uri, "invalid UTF-8", expected="UTF-8 text", got=f"byte {data[e.start]:#04x} at byte offset {e.start}"
        )
    rows, problem = parse_json(text, array=True)
    if problem is not None:
        return CorpusInputError(file.uri, problem[0], expected=problem[1], got=problem[2])
    for index, row in enumerate(rows if row_problem is not None else ()):
        problem = row_problem(row)
        if problem is not None:
            return CorpusInputError(file.uri, f"row {index}: {problem[0]}", expected=problem[1], got=problem[2])
    return None


def parse_json(text: str, array: bool = False) -> tuple[list[dict], tuple[str, str, str] | None]:
    """``(objects, None)``, or ``([], (rule, expected, got))``
    if ``text`` is not one JSON object (or an array of objects).
    """
    expected = "a JSON array of objects" if array else "one JSON object per line"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return [], (
            "not valid JSON",
            expected,
            f"{e.msg} at line {e.lineno} column {e.colno}" if array else f"{e.msg} at column {e.colno}",
        )
    except RecursionError:
        return [], (
            "JSON nested too deeply",
            "at most Python's recursion limit of nested arrays and objects",
            "deeper nesting",
        )
    except ValueError as e:  # an integer past Python's int digit limit (sys.set_int_max_str_digits)
        return [], ("JSON number too long", "integers of at most 4300 digits", _first_line(e)[:120])
    rows = value if array and isinstance(value, list) else [value]
    for row in rows:
        if not isinstance(row, dict):
            return [], ("not a JSON object", expected, type(row).__name__)
    return rows, None
