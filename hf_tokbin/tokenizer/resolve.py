"""Tokenizers: loading one, its identity, and training a byte-level BPE (the TinyStories rules).

A tokenizer is named by ``--tokenizer``:

- ``byte``: 256 entries, id = byte value, no document separator;
- a ``tokenizer.json`` file or a folder holding one;
- a Hub repo id ``NS/NAME`` (optionally with ``subfolder`` and a pinned
  ``revision``), listed at its checked commit and fetched bounded and checked
  into the Hub cache (which serves it under ``HF_HUB_OFFLINE=1``).

Its identity, recorded wherever ids are written, is a :class:`TokenizerInfo`:
``tokenizer_id``, the SHA-256 of ``tokenizer.json``, ``vocab_size``, the
boundary tokens and, for the Hub, the resolved revision.

Boundary tokens (:class:`BoundaryToken`). The document separator (llm.c) /
EOD (Megatron) comes from, in order: ``--doc-sep TOKEN_OR_ID``; the
``eos_token_id`` of ``generation_config.json``; the ``eos_token`` of
``tokenizer_config.json``; the ``eos_token`` of ``special_tokens_map.json``
(a string, or ``{"content": ...}`` as ``transformers`` writes an
``AddedToken``). ``--bos TOKEN_OR_ID`` is given explicitly or not at all. A
token string must be one token of the tokenizer (an added token or a
vocabulary entry); an id must be below ``vocab_size``. The byte tokenizer has
no token strings and no files: only ids 0..255.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

from ..errors import HubError, TokenizerError
from ..formats.release import CONFIG_MAX_BYTES, TOKENIZER_MAX_BYTES
from ..formats.rules import is_repo_id
from ..formats.run_config import BYTE_TOKENIZER_SHA256, BYTE_VOCAB_SIZE, BoundaryToken
from ..formats.tokenizer_configs import (
    CONFIG_FILES,
    FROM_GENERATION_CONFIG,
    ConfigFile,
    eos_token,
    eos_token_id,
    named_separator,
    read_config_file,
    read_config_files,
)
from .info import (  # the identity and the loader, kept importable from here too
    BYTE,
    EOS_TOKEN,  # noqa: F401
    FROM_BOS_OPTION,
    FROM_DOC_SEP_OPTION,
    FROM_LLAMA3_LAYOUT,
    LLAMA3_BEGIN_OF_TEXT,
    TOKENIZER_FILE,
    TokenizerInfo,
    _handed_over,
    _read_tokenizer_bytes,
    load_tokenizer_json,
    take_resolved_tokenizer,  # noqa: F401
    vocab_size_of,
)


def resolve_tokenizer(
    name: str,
    tokenizer_id: str | None = None,
    doc_sep_id: int | None = None,
    revision: str | None = None,
    subfolder: str | None = None,
    *,
    doc_sep: int | str | None = None,
    bos: int | str | None = None,
) -> TokenizerInfo:
    """Find the tokenizer ``name`` refers to and pin its identity and boundary tokens.

    ``doc_sep`` (or its older name ``doc_sep_id``) and ``bos`` are a token
    string or an id (:func:`token_or_id` reads the command line's).
    """
    if doc_sep_id is not None and doc_sep is not None:
        raise TokenizerError(name, "give the separator once: --doc-sep or --doc-sep-id", got=(doc_sep, doc_sep_id))
    doc_sep = doc_sep_id if doc_sep is None else doc_sep
    if name == BYTE or Path(name).exists():
        _refuse_hub_options(name, revision, subfolder)
    if name == BYTE:
        return _byte_tokenizer(tokenizer_id, doc_sep, bos)
    json_path, default_id, source, resolved_revision = _find_tokenizer_json(name, revision, subfolder)
    data = _read_tokenizer_bytes(json_path)
    config, id_space = _check_id_space(json_path, data)
    tokenizer = load_tokenizer_json(json_path, data)
    vocab = _Vocabulary(json_path, tokenizer, config, id_space)
    digest = hashlib.sha256(data).hexdigest()
    _handed_over.clear()
    _handed_over[digest] = (tokenizer, vocab.size)
    # By their own names, not resolved: in the Hub cache each is a link to a blob named by its hash.
    config_files = read_config_files(Path(os.path.abspath(json_path.parent)), TokenizerError)
    if doc_sep is not None:
        separator = vocab.boundary(doc_sep, FROM_DOC_SEP_OPTION, json_path, "--doc-sep")
    else:
        separator = _separator_from_files(vocab, config_files)
    return TokenizerInfo(
        tokenizer_id or default_id,
        digest,
        vocab.size,
        separator.id if separator else None,
        source,
        resolved_revision,
        subfolder,
        os.fspath(Path(json_path).resolve()),
        separator,
        vocab.boundary(bos, FROM_BOS_OPTION, json_path, "--bos") if bos is not None else None,
        config_files,
    )


def llama3_begin_of_text(tokenizer: TokenizerInfo) -> BoundaryToken | None:
    """The tokenizer's ``<|begin_of_text|>``, the token llm.c's own Llama 3 files put before each document; None if it
    has none."""
    if tokenizer.path is None:  # the byte tokenizer
        return None
    vocab = _Vocabulary(Path(tokenizer.path), load_tokenizer_json(tokenizer.path))
    if vocab.tokenizer.token_to_id(LLAMA3_BEGIN_OF_TEXT) is None:
        return None
    return vocab.boundary(LLAMA3_BEGIN_OF_TEXT, FROM_LLAMA3_LAYOUT, tokenizer.path, "<|begin_of_text|>")


def _byte_tokenizer(tokenizer_id: str | None, doc_sep: int | str | None, bos: int | str | None) -> TokenizerInfo:
    """The identity of the byte tokenizer, with the boundary tokens given."""
    separator = _byte_boundary(doc_sep, FROM_DOC_SEP_OPTION, "--doc-sep")
    return TokenizerInfo(
        tokenizer_id or BYTE,
        BYTE_TOKENIZER_SHA256,
        BYTE_VOCAB_SIZE,
        separator.id if separator else None,
        BYTE,
        None,
        None,
        None,
        separator,
        _byte_boundary(bos, FROM_BOS_OPTION, "--bos"),
    )


def _find_tokenizer_json(name: str, revision: str | None, subfolder: str | None) -> tuple[Path, str, str, str | None]:
    """The ``tokenizer.json`` that ``name`` (a file, a folder or a Hub repo id) refers to.

    Returns its path, the tokenizer id it gives by default, its source (``"local"`` or the repo id)
    and the Hub commit it was downloaded at (None for a local file).
    """
    path = Path(name)
    if path.exists():
        json_path = path / TOKENIZER_FILE if path.is_dir() else path
        if not json_path.is_file():
            raise TokenizerError(path, f"no {TOKENIZER_FILE} in this folder")
        # Absolute ("." and "tokenizer.json" have no folder name of their own) but not resolved:
        # a symlink (as in a Hub cache snapshot) is named after the folder it sits in, not its target's.
        folder = Path(os.path.abspath(json_path)).parent
        return json_path, _model_name(folder) or folder.name, "local", None
    if is_repo_id(name):
        from ..hub.retry import path_or_repo

        with path_or_repo(name):
            json_path, resolved_revision = _download_from_hub(name, revision, subfolder)
        return json_path, name.split("/")[-1], name, resolved_revision
    raise TokenizerError(
        name,
        "tokenizer not found",
        expected="'byte', a tokenizer.json, a folder holding one, or a Hub repo id NS/NAME",
        got="no such file or folder",
    )


# The files beside tokenizer.json that name the model, and their key, in the order they are asked.
MODEL_NAME_KEYS = (("config.json", "_name_or_path"), ("tokenizer_config.json", "name_or_path"))


def _model_name(folder: Path) -> str | None:
    """The model name the files in ``folder`` give (the last part of a repo id or path), a local tokenizer's default
    id; None if none gives one that is a folder name. A folder holding a model is often named for its role
    (``models``, a Hub cache snapshot's commit), while its files name the model."""
    from .._io import read_record_bytes
    from ..formats.rules import is_folder_name

    for name, key in MODEL_NAME_KEYS:
        try:
            value = json.loads(read_record_bytes(folder / name, TokenizerError, CONFIG_MAX_BYTES)).get(key)
        except (TokenizerError, ValueError, AttributeError):  # absent or unreadable: it names nothing
            continue
        model = PurePosixPath(value.rstrip("/")).name if isinstance(value, str) else None
        if is_folder_name(model):
            return model
    return None


def token_or_id(value: str | None) -> int | str | None:
    """A ``--doc-sep``/``--bos`` value: ASCII digits are an id, anything else a token string."""
    if value is None:
        return None
    return int(value) if value.isascii() and value.isdigit() else value


def _byte_boundary(value: int | str | None, source: str, option: str) -> BoundaryToken | None:
    """A boundary token of the byte tokenizer: an id 0..255 (a byte value, which text can hold)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TokenizerError(
            BYTE,
            f"{option}: the byte tokenizer has no token strings, its ids are the byte values",
            expected="an id 0..255",
            got=value,
        )
    if not 0 <= value < BYTE_VOCAB_SIZE:
        raise TokenizerError(BYTE, f"{option} must be a valid id", expected=f"0 <= id < {BYTE_VOCAB_SIZE}", got=value)
    return BoundaryToken(value, None, source, True)


def _separator_from_files(vocab: "_Vocabulary", config_files: tuple[ConfigFile, ...]) -> BoundaryToken | None:
    """The separator the tokenizer's own files name (:func:`~hf_tokbin.formats.tokenizer_configs.named_separator`)."""
    named = named_separator(config_files, TokenizerError)
    if named is None:
        return None
    return vocab.boundary(
        named.value,
        named.source,
        named.path,
        "eos_token_id" if named.source == FROM_GENERATION_CONFIG else "eos_token",
    )


class _Vocabulary:
    """The ids and token strings of a ``tokenizers.Tokenizer``, for naming boundary tokens."""

    def __init__(self, json_path: Path, tokenizer, config: dict | None = None, size: int | None = None):
        self.json_path = json_path
        self.tokenizer = tokenizer
        self.size = vocab_size_of(tokenizer) if size is None else size  # size: the id space read from the JSON
        self._json = config  # tokenizer.json as read (None: parsed from the tokenizer when needed)

    def boundary(self, value: int | str, source: str, where, what: str) -> BoundaryToken:
        """``value`` (an id, or a token string that is one token) as a boundary token; ``where``/``what`` name it in
        errors."""
        if isinstance(value, str):
            token_id = self.tokenizer.token_to_id(value)
            if token_id is None:
                raise TokenizerError(
                    where,
                    f"{what} is not a single token of this tokenizer",
                    expected=f"an added token or a vocabulary entry of {self.json_path.name}, or an id",
                    got=repr(value),
                )
        elif isinstance(value, int) and not isinstance(value, bool):
            token_id = value
        else:
            raise TokenizerError(where, f"{what} must be a token string or an id", got=value)
        if not 0 <= token_id < self.size:
            raise TokenizerError(
                where, f"{what}: a boundary token must be a valid id", expected=f"0 <= id < {self.size}", got=token_id
            )
        if self._json is None:
            self._json = json.loads(self.tokenizer.to_str())
        return BoundaryToken(
            token_id,
            self.tokenizer.id_to_token(token_id),
            source,
            ordinary_text_can_encode(self._json, self.tokenizer, token_id),
        )


def ordinary_text_can_encode(tokenizer_json: dict, tokenizer, token_id: int) -> bool:
    """Whether document text, with special-token text as ordinary text, can encode to ``token_id``.

    False is a proof, True may be conservative. ``tokenizers`` cuts non-special
    added tokens out of text (True); special ones it leaves to the model, which
    gives only ids of its own vocabulary. A BPE model without ``ignore_merges``
    or affixes gives a multi-character entry only as the result of a merge (or as
    its unknown or byte-fallback token); any other model may give any entry.
    """
    added = tokenizer.get_added_tokens_decoder()
    if token_id in added and not added[token_id].special:
        return True
    model = tokenizer_json.get("model") or {}
    vocab = model.get("vocab")
    if model.get("type") != "BPE" or not isinstance(vocab, dict):
        return True
    entry = next((token for token, i in vocab.items() if i == token_id), None)
    if entry is None:
        return False
    if model.get("ignore_merges") or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return True
    if len(entry) == 1 or entry == model.get("unk_token"):
        return True
    if model.get("byte_fallback") and len(entry) == 6 and entry.startswith("<0x") and entry.endswith(">"):
        return True
    merges = model.get("merges") or []
    return any((m.replace(" ", "", 1) if isinstance(m, str) else "".join(m)) == entry for m in merges)


def _refuse_hub_options(name: str, revision: str | None, subfolder: str | None) -> None:
    """A revision or subfolder names a place in a Hub repo: given with the byte or a local tokenizer, it would be
    recorded in run_config.json without having applied, so it is refused."""
    for flag, value in (("--tokenizer-revision", revision), ("--tokenizer-subfolder", subfolder)):
        if value is not None:
            what = "the byte tokenizer" if name == BYTE else "a local tokenizer"
            raise TokenizerError(
                name,
                f"{flag} applies to a Hub tokenizer only, not to {what}",
                got=value,
                hint=f"drop {flag}, or name a Hub repo NS/NAME",
            )


MAX_ID = 2**31 - 1  # the largest id any output holds: Megatron's int32 files and the build's int32 staging pairs


def _check_id_space(json_path: Path, data: bytes) -> tuple[dict | None, int | None]:
    """Refuse a tokenizer.json whose largest id no output can hold, before ``tokenizers`` loads it.

    Read as JSON first: ``tokenizers`` sizes tables by the largest id, so an id
    near 2**31 can abort the process in Rust before any check of ours runs.
    ``data``: the file's bytes. Returns the parsed file and its id space (the
    largest id + 1: :func:`vocab_size_of` without asking ``tokenizers``), or
    ``(None, None)`` where the file is not a tokenizer's JSON as read here.
    """
    from .._io import RECORD_MAX_BYTES, parse_json

    try:
        config = parse_json(data, json_path, TokenizerError, free_text=True) if len(data) <= RECORD_MAX_BYTES else {}
    except TokenizerError:
        return None, None  # not readable JSON: loading it gives tokenizers' own error, named
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    vocab = model.get("vocab")
    ids = list(vocab.values()) if isinstance(vocab, dict) else []
    ids += [t.get("id") for t in config.get("added_tokens") or [] if isinstance(t, dict)]
    ints = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    largest = max(ints, default=-1)
    if largest > MAX_ID:
        raise TokenizerError(
            json_path,
            "ids up to 2**31 - 1 only: Megatron's int32 files and the build's staging hold no larger id",
            expected=f"<= {MAX_ID:,}",
            got=largest,
        )
    if not isinstance(config.get("model"), dict):
        return None, None
    # A vocabulary as a map of non-negative ids (BPE, WordPiece, WordLevel) gives the id space; otherwise (Unigram's
    # list, an id of another type) tokenizers' own count decides.
    whole = isinstance(vocab, dict) and len(ints) == len(ids) and min(ints, default=0) >= 0
    return config, (largest + 1 if whole else None)


def read_eos_token_id(path: Path) -> int | None:
    """``eos_token_id`` of a ``generation_config.json``, or None when there is no such file or key."""
    return eos_token_id(read_config_file(path, TokenizerError), TokenizerError) if Path(path).is_file() else None


def read_eos_token(path: Path) -> str | None:
    """``eos_token`` of a ``tokenizer_config.json`` or ``special_tokens_map.json``; None without file or key."""
    return eos_token(read_config_file(path, TokenizerError), TokenizerError) if Path(path).is_file() else None


def _download_from_hub(repo_id: str, revision: str | None, subfolder: str | None) -> tuple[Path, str]:
    """Fetch tokenizer.json (and the files naming its separator, if any) at a pinned revision into the Hub cache.

    Online, the revision is resolved to a commit id (checked), the tree at that commit gives each file's size and
    digest, and each file is fetched by the one checked download (:mod:`hf_tokbin.hub.download`): refused over its
    bound, read no further than its listed size, checked against its listed digest. Offline, the cache serves what
    an online run fetched. Returns the local tokenizer.json and the commit id it was read at.
    """
    from huggingface_hub import constants

    subfolder = subfolder.strip("/") if subfolder else None
    folder = f"{subfolder}/" if subfolder else ""
    where = f"{repo_id}@{revision or 'main'}/{folder}{TOKENIZER_FILE}"
    if constants.HF_HUB_OFFLINE:
        return _from_hub_cache(repo_id, revision, folder, where)
    return _fetch_from_hub(repo_id, revision, folder, where)


def _fetch_from_hub(repo_id: str, revision: str | None, folder: str, where: str) -> tuple[Path, str]:
    """Online: the files listed at the checked commit, each fetched bounded and checked into the cache's snapshot."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    from ..corpus.private_apis import record_cached_ref
    from ..errors import TokbinError
    from ..hub.download import DownloadLimits, Source, hub_snapshot_folder, matches, tree_expected
    from ..hub.retry import RetryPolicy, call_with_retry, fetch_error
    from ..hub.revision import bounded_listing, escaped, is_commit_id

    api = HfApi()
    try:
        commit = call_with_retry(
            RetryPolicy.from_env(), "resolve the tokenizer's revision", lambda: _checked_commit(api, repo_id, revision)
        )
        listing = call_with_retry(
            RetryPolicy.from_env(),
            "list the tokenizer's files",
            lambda: bounded_listing(
                api,
                repo_id,
                where,
                repo_type="model",
                revision=commit,
                path_in_repo=folder.rstrip("/") or None,
                recursive=False,
            ),
        )
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001 - the client's errors vary by version; one line naming the file
        raise escaped(fetch_error(where, "tokenizer", e)) from e
    tree = {entry.path: entry for entry in listing if isinstance(entry, RepoFile)}
    if folder + TOKENIZER_FILE not in tree:
        raise HubError(where, "cannot fetch the tokenizer: no such file in the repo at this revision")
    source = Source(
        repo_id,
        commit,
        endpoint=os.environ.get("HF_ENDPOINT") or None,
        token=None,
        repo_type="model",
        limits=DownloadLimits.from_env(),
    )
    snapshot = hub_snapshot_folder(repo_id, "model", commit)
    for name, max_bytes in ((TOKENIZER_FILE, TOKENIZER_MAX_BYTES), *((n, CONFIG_MAX_BYTES) for n in CONFIG_FILES)):
        path = folder + name
        if path not in tree:
            _record_no_file(repo_id, commit, path)  # so an offline build knows the file is absent, not uncached
            continue
        expected = tree_expected(tree, path, source, max_bytes=max_bytes)
        if not matches(snapshot / path, expected):
            _fetch_checked(source, path, snapshot, expected, where)
    if not is_commit_id(revision):
        # Fetched at the commit id: record the branch's commit, so an offline build of the branch finds this snapshot.
        record_cached_ref(snapshot, revision or "main", commit)
    return snapshot / folder / TOKENIZER_FILE, commit


def _checked_commit(api, repo_id: str, revision: str | None) -> str:
    from ..hub.revision import resolve_commit

    return resolve_commit(api, repo_id, revision, "model")


def _fetch_checked(source, path: str, snapshot: Path, expected, where: str) -> Path:
    """``path`` fetched by the checked download, retried on transient failures; the client's failures in one line."""
    from ..errors import TokbinError
    from ..hub.download import read_error
    from ..hub.retry import RetryPolicy, call_with_retry
    from ..hub.revision import escaped

    try:
        return call_with_retry(
            RetryPolicy.from_env(), f"download {path}", lambda: source.fetch(path, snapshot, expected)
        )
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001
        raise escaped(
            read_error(source.uri(path), f"download {path}", e, source.endpoint, source.repo_id, "model")
        ) from e


def _record_no_file(repo_id: str, commit: str, path: str) -> None:
    """Record in the cache that ``path`` is not in the repo at ``commit``, where ``try_to_load_from_cache`` reads it."""
    from ..hub.download import hub_cache_folder, safe_folder

    parent, _, name = f".no_exist/{commit}/{path}".rpartition("/")
    marker = safe_folder(hub_cache_folder(repo_id, "model"), parent) / name
    if not marker.is_file():
        marker.touch()


def _from_hub_cache(repo_id: str, revision: str | None, folder: str, where: str) -> tuple[Path, str]:
    """Offline: tokenizer.json and its config files as an online run left them in the cache, at a checked commit.

    A config file is absent only where the cache records it absent: one it does not hold at all is an error, as a
    build without the separator it names would give other ids.
    """
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    from ..errors import shown
    from ..hub.retry import fetch_error
    from ..hub.revision import is_commit_id

    try:
        json_path = Path(hf_hub_download(repo_id, folder + TOKENIZER_FILE, revision=revision))
    except Exception as e:
        raise fetch_error(where, "tokenizer", e) from e
    # The cache's snapshot folder is named after the commit the server answered: that is the pinned revision.
    commit = json_path.parents[len(PurePosixPath(folder + TOKENIZER_FILE).parts) - 1].name
    if not is_commit_id(commit):
        raise HubError(
            f"{repo_id}@{shown(revision or 'main')}",
            "the cached commit id is not 40 lowercase hex digits; nothing was written",
            got=shown(commit),
        )
    if is_commit_id(revision) and commit != revision:
        raise HubError(
            f"{repo_id}@{revision}",
            "the cache holds another commit than the one asked for",
            expected=revision,
            got=shown(commit),
        )
    for name in CONFIG_FILES:
        if try_to_load_from_cache(repo_id, folder + name, revision=commit, repo_type="model") is None:
            raise fetch_error(f"{repo_id}@{commit}/{folder}{name}", "tokenizer config", _not_cached())
    return json_path, commit


def _not_cached():
    from huggingface_hub.errors import LocalEntryNotFoundError

    return LocalEntryNotFoundError("not in the local cache")


# ---------------------------------------------------------------- training
