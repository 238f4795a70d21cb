"""Which files of a plain Hub dataset repo make which split: ``load_dataset``'s rules, run on what was checked.

``load_dataset`` decides a repo's splits from its card's ``configs:`` (or,
without one, from the file names: ``data/train-00000-of-00002.parquet``,
``train/``, ...). Asked to do it, ``datasets.load_dataset_builder`` fetches the
card again itself (unchecked, unbounded) and lists the repo again: a server
that answered those second requests differently from the first could swap the
splits, or add a split the checked listing does not hold.

So the split mapping here is ``datasets``' own pattern resolution
(``MetadataConfigs``, ``get_data_patterns``, ``resolve_pattern``: the same
functions, so the same globs, hidden-file and extension rules) run against
the card fetched checked and the tree listing read once at the pinned commit.
That listing is served to ``datasets`` as a read-only fsspec file system
(:class:`ListingFileSystem`, names and sizes only): nothing is fetched again,
and a file the listing does not hold can never be part of a split.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterable

from fsspec.spec import AbstractFileSystem

from ..errors import CorpusInputError, shown

PROTOCOL = "hf-tokbin-listing"
STANDALONE_YAML_NAME = ".huggingface.yaml"  # datasets' config.REPOYAML_FILENAME: merged over the card's YAML


class Listing:
    """A repo tree listing as folders of entries: ``path -> size`` of its files, the folders between them implied."""

    def __init__(self, sizes: dict[str, int]):
        self.sizes = dict(sizes)
        self.folders: dict[str, dict[str, dict]] = {"": {}}
        for path, size in self.sizes.items():
            child, entry = path, {"name": path, "size": size, "type": "file"}
            while True:
                parent = child.rpartition("/")[0]
                known = child in self.folders.setdefault(parent, {})
                self.folders[parent][child] = entry
                if known or not parent:
                    break
                child, entry = parent, {"name": parent, "size": 0, "type": "directory"}

    def __repr__(self) -> str:  # fsspec hashes its arguments' repr for every file-system instance: keep it short
        return f"Listing({len(self.sizes)} files at {id(self):#x})"


class ListingFileSystem(AbstractFileSystem):
    """A read-only fsspec file system whose files are a :class:`Listing`'s: names and sizes, no content."""

    protocol = PROTOCOL
    root_marker = ""
    cachable = False  # one instance per listing, never reused for another repo

    def __init__(self, listing: Listing, **kwargs):
        super().__init__(**kwargs)
        self.listing = listing

    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        if path in self.listing.folders:
            entries = list(self.listing.folders[path].values())
        elif path in self.listing.sizes:
            entries = [{"name": path, "size": self.listing.sizes[path], "type": "file"}]
        else:
            raise FileNotFoundError(path)
        return entries if detail else [entry["name"] for entry in entries]

    def _open(self, path, *args, **kwargs):
        raise PermissionError(f"{path}: a listing holds no content")


_registered = threading.Lock()


def _register() -> None:
    import fsspec

    with _registered:
        if PROTOCOL not in fsspec.registry:
            fsspec.register_implementation(PROTOCOL, ListingFileSystem)


def data_files_by_split(
    where: str, sizes: dict[str, int], card_yaml: dict, config: str | None
) -> dict[str, list[str]]:
    """The repo's data files per split (paths in the repo, in ``datasets``' order), as ``load_dataset(repo, config)``
    would find them, from the checked listing ``sizes`` (path -> size) and the checked card's YAML ``card_yaml``
    (with the repo's ``.huggingface.yaml`` merged over it, as ``datasets`` does)."""
    from datasets import DownloadConfig
    from datasets.data_files import get_data_patterns, sanitize_patterns
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    _register()
    base = f"{PROTOCOL}://"
    download_config = DownloadConfig(storage_options={PROTOCOL: {"listing": Listing(sizes)}})
    try:
        configs = MetadataConfigs.from_dataset_card_data(DatasetCardData(**card_yaml))
        name = _config_name(where, configs, config)
        params = configs.get(name, {})
        if params.get("data_dir"):
            base = f"{base}{str(params['data_dir']).strip('/')}"
        if params.get("data_files") is not None:
            patterns = sanitize_patterns(params["data_files"])
        else:
            patterns = get_data_patterns(base, download_config=download_config)
        found = {
            str(split): _resolved(where, split_patterns, base, download_config)
            for split, split_patterns in patterns.items()
        }
        if not configs:  # datasets keeps the files of the format most of them have (configs: name their own)
            found = _of_one_format(found)
    except CorpusInputError:
        raise
    except Exception as e:  # noqa: BLE001 - datasets' words for a card or layout it cannot use (any shape of YAML): one line
        raise CorpusInputError(
            where,
            "cannot find the dataset's data files",
            got=str(e).splitlines()[0][:300] if str(e) else type(e).__name__,
        ) from None
    prefix = f"{PROTOCOL}://"
    out = {split: [url.removeprefix(prefix) for url in urls] for split, urls in found.items()}
    for split, paths in out.items():
        if not paths:  # datasets stops here too (DataFilesNotFoundError): a split of no file is no split
            raise CorpusInputError(
                where,
                f"split {split!r}: its data_files match no file of the repo",
                hint="check the card's configs: data_files",
            )
        outside = [p for p in paths if p not in sizes]
        if outside:  # cannot happen through the listing file system; said, never assumed
            raise CorpusInputError(
                where, f"split {split!r}: a data file is not in the repo's listing", got=shown(outside[0][:200])
            )
    return out


def _config_name(where: str, configs, config: str | None) -> str:
    """The config ``load_dataset`` picks: the one named, else the card's default (``default``, or the only one)."""
    names = list(configs) or ["default"]
    chosen = config if config is not None else (configs.get_default_config_name() if configs else "default")
    if chosen is None:
        raise CorpusInputError(
            where,
            "the dataset has several configs and none is the default",
            expected=", ".join(names),
            hint="choose one with --corpus-config",
        )
    if chosen not in names:
        raise CorpusInputError(
            where, "--corpus-config names a config the dataset does not have", expected=", ".join(names), got=chosen
        )
    return chosen


def _resolved(where: str, patterns: Iterable[str], base: str, download_config) -> list[str]:
    """Every file of the listing one split's patterns match, as ``DataFilesList.from_patterns`` resolves them.

    A pattern must be a path in the repo: ``resolve_pattern`` hands any other
    (``hf://`` another repo, ``/`` or ``file://`` the local disk, ``ftp://`` a
    host, ``zip://...::``) to the file system it names.
    """
    from glob import has_magic

    from datasets.data_files import resolve_pattern
    from datasets.utils.file_utils import is_relative_path

    from .private_apis import all_allowed_extensions

    files: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not is_relative_path(pattern) or "::" in pattern or "://" in pattern:
            raise CorpusInputError(
                where, "a data_files pattern of the card must be a path in the repo", got=shown(str(pattern)[:200])
            )
        try:
            files.extend(
                resolve_pattern(
                    pattern, base, allowed_extensions=all_allowed_extensions(), download_config=download_config
                )
            )
        except FileNotFoundError:
            if not has_magic(pattern):
                raise
    return files


def _of_one_format(found: dict[str, list[str]]) -> dict[str, list[str]]:
    """Only the files of the format ``datasets`` infers (the most common extension, Parquet on a draw)."""
    from datasets.load import infer_module_for_data_files_list

    from .private_apis import module_file_filter

    modules = {split: infer_module_for_data_files_list(files)[0] for split, files in found.items()}
    module = next(iter(modules.values()), None)
    if module is None or any(m != module for m in modules.values()):
        raise ValueError(f"Couldn't infer the same data file format for all splits. Got {modules}")
    keep = module_file_filter(module)
    return {split: [f for f in files if keep(f)] for split, files in found.items()}


def card_yaml(where: str, card: Path | None, standalone_yaml: Path | None) -> dict:
    """The YAML of a checked card, with a checked ``.huggingface.yaml`` merged over it (``datasets``' order)."""
    import yaml
    from huggingface_hub import DatasetCard

    try:
        data = DatasetCard.load(card).data.to_dict() if card is not None else {}
        extra = yaml.safe_load(standalone_yaml.read_text(encoding="utf-8")) if standalone_yaml is not None else None
    except Exception as e:  # noqa: BLE001 - load_dataset stops on it too (bad YAML, nesting past the recursion limit): one line
        raise CorpusInputError(
            where,
            "the dataset card's YAML cannot be read",
            got=str(e).splitlines()[0][:300] if str(e) else type(e).__name__,
        ) from None
    if isinstance(extra, dict):
        data.update(extra)
    return data
