"""The main job in one call: :func:`build_release`.

::

    import hf_tokbin

    summary = hf_tokbin.build_release("HuggingFaceFW/fineweb-edu", "gpt2-tokenizer/", "release/", num_proc=8)
    print(summary.table())

``source`` is any of:

- a corpus folder (``hf-tokbin corpus``: holds ``_MANIFEST.json``);
- a Hub dataset repo id ``NS/NAME`` (an hf_tokbin corpus, or any repo of
  Parquet files: shards fetched one per part, see :mod:`hf_tokbin.corpus.source`);
- input files, folders, globs or ``hf://`` paths (a string or a list), as
  ``hf-tokbin corpus import`` takes them;
- an in-memory ``datasets.Dataset``, ``DatasetDict``, ``IterableDataset`` or
  ``IterableDatasetDict``.

Inputs that are not a corpus yet are first written as one (the same writer,
rules and checks as ``hf-tokbin corpus import``) into a temporary folder,
removed afterwards; the same input always gives the same corpus bytes, so a
re-run resumes the build. Progress bars are on by default, as on the command
line (``progress=False``, or ``TQDM_DISABLE=1``, turns them off).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


@dataclass(frozen=True)
class ReleaseSummary:
    """What :func:`build_release` did: the build's counts and where the corpus came from."""

    build: object  # hf_tokbin.pipeline.BuildSummary
    corpus_name: str
    corpus_source: str  # "local", a Hub repo id, "files" or "in-memory dataset"
    corpus_revision: str | None
    split_rule: str
    empty_documents_dropped: int
    # limit=N: hf_tokbin.formats.corpus_manifest.CorpusSubset (what each split got), else None
    corpus_subset: object = None
    plan: object = None  # the hf_tokbin.pipeline.BuildPlan that was run
    dry_run: str | None = None  # dry_run=True: the plan described (build is None, nothing was written)
    dry_run_record: dict | None = None  # and the same facts as a record (build --dry-run --json)

    @property
    def out(self) -> str:
        return self.plan.out if self.build is None else self.build.out

    @property
    def counts(self):
        return self.build.counts

    def table(self) -> str:
        if self.dry_run is not None:
            return self.dry_run
        origin = self.corpus_source + (f"@{self.corpus_revision}" if self.corpus_revision else "")
        head = (
            f"corpus {self.corpus_name} from {origin}; split rule {self.split_rule}; "
            f"{self.empty_documents_dropped:,} empty documents dropped"
        )
        subset = [*self.corpus_subset.lines()] if self.corpus_subset is not None else []
        return "\n".join([head, *subset, self.build.table()])

    __str__ = table


def build_release(
    source, tokenizer, out: str | os.PathLike, *, progress: bool = True, name: str | None = None,
    revision: str | None = None, config: str | None = None, splits: Sequence[str] | None = None,
    text_column: str | Sequence[str] = "text", split: str = "auto", split_map: dict[str, str] | None = None,
    val_per_mille: int = 1, shard_rows: int | None = None, shard_bytes: int | None = None,
    tokenizer_id: str | None = None, tokenizer_revision: str | None = None, tokenizer_subfolder: str | None = None,
    doc_sep: int | str | None = None, bos: int | str | None = None, engine: str = "local",
    ray_address: str | None = None, check_ids: str = "all", dry_run: bool = False, on_plan=None, options=None,
    **option_fields,
) -> ReleaseSummary:
    """Build a verified tokenized release of ``source`` with ``tokenizer`` into ``out``; see the module docstring.

    ``hf-tokbin build`` runs this very function with its flags. ``tokenizer`` is what ``--tokenizer`` takes
    (``byte``, a ``tokenizer.json``, a folder, a Hub repo id at ``tokenizer_revision`` in ``tokenizer_subfolder``)
    or a :class:`hf_tokbin.TokenizerInfo`; ``doc_sep`` and ``bos`` are what ``--doc-sep`` and ``--bos`` take (a
    token string or an id). ``revision``, ``config``, ``splits`` choose a Hub dataset's commit, config and splits.
    ``text_column``, ``split``, ``split_map``, ``val_per_mille``, ``shard_rows``/``shard_bytes`` apply when
    ``source`` is first written as a corpus (files or an in-memory dataset); ``name`` names that corpus (default:
    the name of ``out``). ``options`` (a :class:`hf_tokbin.pipeline.BuildOptions`) and the other keywords, its
    fields (``formats``, ``num_proc``, ``limit``, ``llmc_layout``, ``shuffle_seed``, ``fast``, ...), are the build's
    options, as ``hf-tokbin build``'s flags give them. ``engine``: ``local`` or ``ray`` (at ``ray_address``).
    ``on_plan(plan)`` is called before any work. ``dry_run``: no lock, nothing written; ``summary.dry_run`` is the
    plan described.
    """
    from .formats.build_options import BuildOptions
    from .pipeline import run_build

    options = BuildOptions.of(options, **option_fields)  # every option checked before any work
    import_options = dict(
        text_column=text_column, split=split, split_map=split_map, val_per_mille=val_per_mille, shard_rows=shard_rows,
        shard_bytes=shard_bytes, source_column=options.source_column,
    )
    tokenizer_choice = dict(
        tokenizer_id=tokenizer_id, revision=tokenizer_revision, subfolder=tokenizer_subfolder, doc_sep=doc_sep, bos=bos
    )
    corpus_choice = dict(
        progress=progress, name=name, hub_choice=(revision, config, splits), import_options=import_options,
        check_ids=check_ids, plan_only=dry_run,
    )
    corpus: dict = {}  # where the corpus came from, for the summary

    def planning():
        return _planned(source, tokenizer, out, options, tokenizer_choice, corpus_choice, corpus)

    steps = dict(engine=engine, ray_address=ray_address, progress=progress, dry_run=dry_run, on_plan=on_plan)
    plan, built = run_build(out, planning, **steps)
    manifest = plan.corpus
    return ReleaseSummary(
        None if dry_run else built, manifest.name, corpus["origin"], corpus["revision"], manifest.split_rule,
        manifest.empty_documents_dropped, plan.corpus_subset, plan, *(built if dry_run else (None, None)),
    )


@contextlib.contextmanager
def _planned(source, tokenizer, out, options, tokenizer_choice: dict, corpus_choice: dict, corpus: dict):
    """The plan of :func:`build_release`'s build, while its corpus lasts: the tokenizer resolved, the corpus found
    (written first where it is not one yet, :func:`corpus_for_build`). ``corpus`` gets its origin and revision."""
    from .pipeline import plan_build
    from .tokenizer.resolve import TokenizerInfo, resolve_tokenizer

    if not isinstance(tokenizer, TokenizerInfo):
        choice = dict(tokenizer_choice)
        tokenizer = resolve_tokenizer(os.fspath(tokenizer), choice.pop("tokenizer_id"), **choice)
    if options.mix is not None:
        found, records, mix_origin = mixed_corpus(source, options.mix, corpus_choice["name"], corpus_choice)
        corpus.update(origin=f"a mixture of {', '.join(options.mix.names)}", revision=None)
        yield plan_build(
            found.root, tokenizer, out, options, shards=found.shards, mix_corpora=records, mix_origin=mix_origin
        )
        return
    with corpus_for_build(source, out, **corpus_choice) as (found, origin, given):
        corpus.update(origin=origin, revision=found.revision)
        yield plan_build(
            found.root, tokenizer, out, options_for_corpus(options, origin), corpus_source=found.source,
            corpus_revision=found.revision, shards=found.shards, given_ids=given,
        )


def mixed_corpus(source, mix, name: str | None, corpus_choice: dict):
    """A mixture's corpora as one combined corpus, each source's corpus record
    (:func:`hf_tokbin.corpus.mixture.combine_corpora`), and with ``mix.by`` source the record of the one corpus
    they were cut from (else None). ``source``: one corpus folder or Hub repo per source, or the one corpus whose
    source column names them (:func:`hf_tokbin.corpus.mixture.split_by_source`)."""
    from .corpus.mixture import combine_corpora, split_by_source
    from .corpus.source import resolve_corpus_source
    from .errors import BuildError

    if mix.by == "source":
        if not isinstance(source, (str, os.PathLike)) or not _is_corpus_or_repo(source):
            raise BuildError(None, "--mix-by source takes one --corpus: a corpus folder or Hub corpus that counts its "
                             "sources", got=source if isinstance(source, (str, os.PathLike)) else type(source).__name__)
        one = resolve_corpus_source(os.fspath(source), *corpus_choice["hub_choice"], plan_only=False)
        parts, origin = split_by_source(one, mix.names)
        found, records = combine_corpora(parts, mix.names, name if name is not None else origin["name"])
        return found, records, origin

    items = [source] if isinstance(source, (str, os.PathLike)) else source
    items = list(items) if isinstance(items, (list, tuple)) else []
    if not items or not all(_is_corpus_or_repo(item) for item in items):
        paths = all(isinstance(i, (str, os.PathLike)) for i in items)
        raise BuildError(
            None,
            "--mix takes one --corpus per source, each a corpus folder or a Hub dataset repo (its name names it)",
            got=", ".join(map(os.fspath, items)) if items and paths else type(source).__name__,
            hint="write other inputs as a corpus first: hf-tokbin corpus import FILES --out DIR --name NAME",
        )
    if any(corpus_choice["hub_choice"]):
        raise BuildError(
            None, "--corpus-revision, --corpus-config and --corpus-split apply to one corpus, not to a mixture"
        )
    if len(items) != len(mix.names):
        raise BuildError(
            ", ".join(map(os.fspath, items)),
            "--mix names each --corpus once",
            expected=f"{len(mix.names)} corpora ({', '.join(mix.names)})",
            got=f"{len(items)}",
        )
    found = [resolve_corpus_source(os.fspath(item), plan_only=corpus_choice["plan_only"]) for item in items]
    return (*combine_corpora(found, mix.names, name if name is not None else "-".join(mix.names)), None)



IMPORTED_FILES, IMPORTED_DATASET = "files", "in-memory dataset"  # where a corpus written by corpus_for_build came from


@contextlib.contextmanager
def corpus_for_build(
    source,
    out,
    *,
    progress: bool = True,
    name: str | None = None,
    hub_choice: tuple = (None, None, None),
    import_options: dict | None = None,
    check_ids: str = "all",
    plan_only: bool = False,
):
    """``(corpus, origin, given ids)`` of a build's ``source`` (what :func:`build_release` and ``build --corpus``
    take), while the context lasts.

    A corpus folder or Hub repo is used as it is; files, folders, globs and
    in-memory datasets are first written as a corpus into a temporary folder
    (named ``name``, default the name of ``out``), removed afterwards.
    ``given`` is the :class:`~hf_tokbin.formats.given_ids.GivenIds` of a
    dataset with an ``input_ids`` column, else None. ``plan_only`` (a dry run):
    a pushed Hub corpus folder is not fetched (see :func:`resolve_corpus_source`).
    """
    from .errors import BuildError
    from .formats.given_ids import GivenIds, IdsCheck

    name = name if name is not None else Path(os.fspath(out).rstrip("/")).name
    check = IdsCheck.parse(check_ids, out)
    source = _loaded_if_saved_with_ids(source)
    with tempfile.TemporaryDirectory(prefix="hf_tokbin-corpus-", ignore_cleanup_errors=True) as scratch:
        given = (
            GivenIds(os.fspath(Path(scratch) / ".input_ids"), check)
            if _is_dataset(source) and has_given_ids(source)
            else None
        )
        found, origin = _corpus_source(
            source, Path(scratch) / name, progress, hub_choice, dict(import_options or {}), given, plan_only
        )
        if given is None and check.sample is not None:
            raise BuildError(out, "check_ids applies to a dataset with an input_ids column", got=check_ids)
        yield found, origin, given


def _corpus_source(
    source, scratch: Path, progress: bool, hub_choice: tuple, import_options: dict, given=None, plan_only: bool = False
):
    """(the resolved corpus, where it came from): a corpus folder or Hub repo as it is, else first written as a corpus
    at ``scratch``."""
    from .corpus.source import resolve_corpus_source

    if _is_corpus_or_repo(source):
        found = resolve_corpus_source(os.fspath(source), *hub_choice, plan_only=plan_only)
        return found, found.source
    if _is_dataset(source):
        import_dataset(
            source,
            scratch,
            name=scratch.name,
            progress=progress,
            _given_ids_to=given and given.folder,
            **import_options,
        )
        return resolve_corpus_source(os.fspath(scratch)), IMPORTED_DATASET
    from .corpus.write import import_corpus

    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    import_corpus(paths, scratch, name=scratch.name, progress=progress, **import_options)
    return resolve_corpus_source(os.fspath(scratch)), IMPORTED_FILES


def options_for_corpus(options, origin: str):
    """The build's options for the corpus :func:`corpus_for_build` gave (``origin``): a source column the import here
    counted is that corpus's own ``source`` column now (another name at the build is refused by ``plan_build``)."""
    import dataclasses

    from .formats.corpus_shard import SOURCE_COLUMN

    if origin in (IMPORTED_FILES, IMPORTED_DATASET) and options.source_column is not None:
        return dataclasses.replace(options, source_column=SOURCE_COLUMN)
    return options


def _loaded_if_saved_with_ids(source):
    """A ``save_to_disk`` folder whose rows have ``input_ids``, loaded (memory-mapped) so its ids are the given ids;
    else ``source``.

    Without ``input_ids`` the folder is read as the files it holds (``corpus import``'s reader, which names what is
    wrong).
    """
    from .corpus.inputs import is_saved_dataset_folder, load_saved_dataset

    if not isinstance(source, (str, os.PathLike)) or not is_saved_dataset_folder(Path(source)):
        return source
    loaded = load_saved_dataset(Path(source))  # a broken folder is refused naming its file, before datasets reads it
    return loaded if has_given_ids(loaded) else source


def _is_dataset(source) -> bool:
    import sys

    if "datasets" not in sys.modules:  # not imported: cannot be one (and importing it here would cost seconds)
        return False
    import datasets

    return isinstance(
        source, (datasets.Dataset, datasets.DatasetDict, datasets.IterableDataset, datasets.IterableDatasetDict)
    )


def _is_corpus_or_repo(source) -> bool:
    from .formats.corpus_manifest import MANIFEST_NAME
    from .formats.rules import is_repo_id

    if not isinstance(source, (str, os.PathLike)):
        return False
    text = os.fspath(source)
    if Path(text, MANIFEST_NAME).is_file():
        return True
    return not Path(text).exists() and is_repo_id(text) and "://" not in text and not any(c in text for c in "*?[")


def import_dataset(
    dataset, out: str | os.PathLike, *, name: str | None = None, text_column="text", split: str = "auto",
    split_map=None, val_per_mille: int = 1, shard_rows=None, shard_bytes=None, progress: bool = False,
    license: str = "unknown", language=(), source_column: str | None = None, _given_ids_to=None,
):
    """Write an in-memory ``datasets`` dataset as a corpus folder, with ``corpus import``'s rules and checks.

    A ``DatasetDict``'s split names are each row's split (unless the rows
    have a split column), mapped as by ``split_map``. ``source_column`` is
    copied as a ``source`` column (as ``corpus import --source-column``). The manifest lists no
    sources: an in-memory dataset has no input files. ``_given_ids_to``
    (``build_release``'s): a folder where each kept row's ``input_ids`` are
    written, in corpus order (:class:`hf_tokbin.formats.given_ids.GivenIdsWriter`).
    """
    import datasets
    import pyarrow as pa
    from datasets.data_files import DataFilesDict, DataFilesList

    from .corpus.builders.corpus_shards import CorpusShards
    from .corpus.inputs import InputFile
    from .corpus.write import CorpusWriter, ShardLimit, split_rule_name
    from .formats.given_ids import ID_COLUMN, GivenIdsWriter

    name = Path(out).name if name is None else name
    members = (dict(dataset) if isinstance(dataset, (datasets.DatasetDict, datasets.IterableDatasetDict))
               else {None: dataset})
    text_columns = (text_column,) if isinstance(text_column, str) else tuple(text_column)
    inputs = [InputFile(f"<in-memory dataset{'' if key is None else f' split {key}'}>", str(key), "arrow", key)
              for key in members]
    with CorpusWriter(out, name, ShardLimit.of(shard_rows, shard_bytes)) as corpus:
        builder = CorpusShards(
            cache_dir=corpus.cache,
            # never read: tables come from the dataset
            data_files=DataFilesDict({"input": DataFilesList(["in-memory.arrow"], [()])}),
            text_columns=text_columns, split=split, split_map=dict(split_map or {}), val_per_mille=val_per_mille,
            source_column=source_column,
        )

        given = GivenIdsWriter(Path(_given_ids_to), list(members)) if _given_ids_to is not None else None

        def checked_tables():
            for member_index, (file, member) in enumerate(zip(inputs, members.values())):
                first_row = 0
                for batch in _batches(member):
                    table = batch if isinstance(batch, pa.Table) else pa.Table.from_pydict(batch)
                    checked = builder.check_table(file, table, first_row)
                    if given is not None:
                        given.add(member_index, first_row, table.column(ID_COLUMN), checked.column("split"),
                                  checked.column("text"), file.uri)
                    yield checked
                    first_row += table.num_rows

        try:
            corpus.write_tables(checked_tables())
        finally:
            if given is not None:
                given.close()
        return corpus.finish(split_rule_name(builder, inputs), (), license, language)


def _batches(member, rows: int = 10_000):
    import datasets

    if isinstance(member, datasets.Dataset):
        return member.with_format("arrow").iter(rows)
    return member.iter(rows)  # IterableDataset: dicts of columns


def show(
    release,
    split: str = "train",
    *,
    doc: int | None = None,
    window: int | None = None,
    length: int | None = None,
    format: str | None = None,
    tokenizer=None,
):
    """Decode document ``doc``, or ``length`` tokens from ``window``, of a release's split
    (:mod:`hf_tokbin.readers.decode`).

    Decoded with the tokenizer ``run_config.json`` pins (``byte``, or its Hub
    repo at the recorded commit); a release built from a local
    ``tokenizer.json`` needs it as ``tokenizer`` (its SHA-256 is checked).
    """
    from .formats.release import RUN_CONFIG_NAME
    from .formats.run_config import RunConfig
    from .readers.decode import show as show_with
    from .tokenizer.decode import release_decoder

    root = Path(release)
    decode = release_decoder(root, RunConfig.read(root / RUN_CONFIG_NAME), tokenizer)
    return show_with(release, split, doc=doc, window=window, length=length, format=format, decode=decode)


# -- the datasets way in: Dataset.map with the release's encoder, then a release from the mapped ids
#
#     ds = datasets.load_dataset("NS/NAME", split="train")
#     mapped = ds.map(hf_tokbin.tokenize("tok/"), batched=True, num_proc=8)
#     hf_tokbin.build_release(mapped, "tok/", "release/")             # every document's ids checked
#     hf_tokbin.build_release(mapped, "tok/", "release/", check_ids="sample:1000")
#
# tokenize() is the build's own encoder (tokenizers' ids, the fast path only where it is proven identical, long
# documents in bounded pieces) as a picklable batched map function: a row's input_ids are exactly the ids the release
# holds for its text (no boundary token: those are each format's business). A dataset with an input_ids column is
# written as a corpus as any dataset is, its ids kept beside it (hf_tokbin.formats.given_ids), and the build writes
# them instead of encoding the text, after checking them: every document by default, or sample:K.


class Tokenize:
    """A batched ``Dataset.map`` function: ``{"input_ids": ...}`` for a batch's ``text_column``, the release's ids.

    Picklable: the encoder travels with its fast-path outcome (checked once,
    here), so ``num_proc`` workers encode with the same routing and proof.
    """

    def __init__(self, encoder, vocab_size: int, text_column: str = "text"):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.text_column = text_column

    def __call__(self, batch) -> dict:
        import numpy as np

        from .errors import CorpusInputError
        from .formats.given_ids import ID_COLUMN
        from .pipeline.encode import EncodeBatch

        if self.text_column not in batch:
            column = self.text_column
            got = list(batch)[:10]
            raise CorpusInputError(None, f"missing text column {column!r}", expected=f"a column {column!r}", got=got)
        texts = batch[self.text_column]
        texts = texts.to_pylist() if hasattr(texts, "to_pylist") else list(texts)
        if any(not isinstance(t, str) for t in texts):
            bad = next(t for t in texts if not isinstance(t, str))
            raise CorpusInputError(None, f"column {self.text_column!r} must hold strings", got=type(bad).__name__)
        flat, lengths = EncodeBatch(self.encoder, self.vocab_size, self.text_column).encode(texts)
        # A list of arrays (views of one buffer): what batched map takes, typed List(uint32) by datasets.
        return {ID_COLUMN: np.split(np.asarray(flat, dtype=np.uint32), np.cumsum(lengths)[:-1])}


def tokenize(
    tokenizer,
    *,
    text_column: str = "text",
    fast: str = "auto",
    parse_special: bool = False,
    tokenizer_id: str | None = None,
) -> Tokenize:
    """The batched ``map`` function of ``tokenizer`` (what ``--tokenizer`` takes, or a :class:`TokenizerInfo`).

    ``parse_special`` must be the build's (``--parse-special-tokens``): it
    changes the ids. ``fast`` never changes an id.
    """
    from .engines.panics import engine_output_held
    from .tokenizer.encoder import encoder_for
    from .tokenizer.resolve import TokenizerInfo, resolve_tokenizer

    if not isinstance(tokenizer, TokenizerInfo):
        tokenizer = resolve_tokenizer(os.fspath(tokenizer), tokenizer_id)
    encoder = encoder_for(tokenizer.path, fast, parse_special=parse_special)
    with engine_output_held():  # as the build checks it (pipeline.encode.prepare_encoder)
        encoder.check_fast_path([])  # once, in this process: the outcome is pickled to every worker
    return Tokenize(encoder, tokenizer.vocab_size, text_column)


def has_given_ids(dataset) -> bool:
    """Whether an in-memory dataset (a ``Dataset`` or ``IterableDataset``, or every member of a ``DatasetDict`` or
    ``IterableDatasetDict``: dicts of them, whose ``column_names`` is a dict by split) has an ``input_ids`` column."""
    from .formats.given_ids import ID_COLUMN

    members = list(dataset.values()) if isinstance(dataset, dict) else [dataset]
    return bool(members) and all(ID_COLUMN in _column_names(m) for m in members)


def _column_names(member) -> list[str]:
    """A dataset's columns; an ``IterableDataset`` of unknown features (a generator's) shows them in its first row."""
    if member.column_names is not None:
        return list(member.column_names)
    first = next(iter(member.take(1)), None)
    return list(first) if first is not None else []
