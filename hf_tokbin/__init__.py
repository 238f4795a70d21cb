"""hf_tokbin: tokenized LLM pretraining releases from Hugging Face datasets.

The main job, in one call (a corpus folder, files or globs, a Hub dataset repo, or an in-memory
``datasets.Dataset`` / ``DatasetDict`` / ``IterableDataset`` in; a verified release out)::

    import hf_tokbin

    summary = hf_tokbin.build_release("NS/NAME", "tok/", "release/", formats=("llmc", "megatron"), num_proc=2)
    print(summary.table())
    print(hf_tokbin.verify_release("release/").summary())
    hf_tokbin.hub.push_folder("release/", "me/name-tok")

The ``datasets`` way in: map with the release's own encoder, then build from the mapped ids
(checked against the tokenizer; see :func:`hf_tokbin.api.tokenize`)::

    mapped = ds.map(hf_tokbin.tokenize("tok/"), batched=True, num_proc=8)
    hf_tokbin.build_release(mapped, "tok/", "release/")

Step by step (the CLI ``hf-tokbin`` is a thin layer over these)::

    hf_tokbin.write_tinystories_corpus("train.txt", "valid.txt", "corpus/")  # or import_corpus([...], "corpus/")
    tokenizer = hf_tokbin.resolve_tokenizer("tok/")  # "byte", a tokenizer.json, a folder, NS/NAME
    plan = hf_tokbin.plan_build("corpus/", tokenizer, "release/", formats=("llmc", "megatron"), num_proc=2)
    print(hf_tokbin.pipeline.build(plan).table())

Readers for training: :mod:`hf_tokbin.readers`. Formats: :mod:`hf_tokbin.formats`.
"""

__version__ = "0.1.0"

from .errors import (  # noqa: E402
    BuildError,
    CorpusInputError,
    FormatError,
    HubError,
    TokbinError,
    TokenizerError,
    VerificationError,
)

# Loaded on first use: the stages import datasets, tokenizers or the Hub client, the
# formats numpy, so `hf-tokbin --help` and a reader's `import hf_tokbin` stay quick.
_LAZY = {
    "BuildOptions": "formats.build_options",
    "LlmcWriter": "formats.llmc",
    "TokensManifest": "formats.llmc",
    "open_tokens": "formats.llmc",
    "write_tokens": "formats.llmc",
    "MegatronPair": "formats.megatron",
    "MegatronWriter": "formats.megatron",
    "MixtureSpec": "formats.mixture",
    "BuildPlan": "pipeline",
    "BuildSummary": "pipeline",
    "ReleaseSummary": "api",
    "build_release": "api",
    "tokenize": "api",
    "show": "api",
    "import_dataset": "api",
    "plan_build": "pipeline",
    "import_corpus": "corpus",
    "verify_corpus": "verify",
    "write_tinystories_corpus": "corpus",
    "TokenizerInfo": "tokenizer",
    "resolve_tokenizer": "tokenizer",
    "train_bpe": "tokenizer",
    "verify_path": "verify",
    "verify_release": "verify",
}


_SUBPACKAGES = ("pipeline", "cards", "corpus", "engines", "formats", "hub", "output", "readers", "tokenizer", "verify")


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    if name in _SUBPACKAGES:  # hf_tokbin.hub.push_folder(...) after a plain `import hf_tokbin`
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BuildError",
    "BuildOptions",
    "BuildPlan",
    "BuildSummary",
    "CorpusInputError",
    "FormatError",
    "HubError",
    "LlmcWriter",
    "MegatronPair",
    "MegatronWriter",
    "MixtureSpec",
    "TokbinError",
    "TokenizerError",
    "TokenizerInfo",
    "TokensManifest",
    "ReleaseSummary",
    "VerificationError",
    "build_release",
    "import_corpus",
    "import_dataset",
    "open_tokens",
    "plan_build",
    "resolve_tokenizer",
    "show",
    "tokenize",
    "train_bpe",
    "verify_corpus",
    "verify_path",
    "verify_release",
    "write_tinystories_corpus",
    "write_tokens",
]
