"""Real tokenizers (GPT-2: uint16 paths; Llama 3: uint32/int32 paths) on real and generated text.

megatron-core's own ``IndexedDataset`` reads the release's pairs, and every
document's ids equal ``tokenizers``' ``encode(text, add_special_tokens=False)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from real_text import real_documents
from release_fixtures import stories, write_corpus
from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json
from tokenizers import Tokenizer

from hf_tokbin.formats import llmc, megatron
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify.release import verify_release

pytestmark = pytest.mark.slow  # real tokenizers on real text

CASES = {
    # tokenizer folder, llm.c version, Megatron dtype code
    "gpt2": (gpt2_tokenizer_json, llmc.VERSION_UINT16, megatron.CODE_UINT16),
    "llama3": (llama3_tokenizer_json, llmc.VERSION_UINT32, megatron.CODE_INT32),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    real = real_documents()
    train, validation = real[: len(real) * 3 // 4], real[len(real) * 3 // 4 :]
    return write_corpus(
        tmp_path_factory.mktemp("real"),
        [("train", train), ("train", stories(200, seed=11)), ("validation", validation + stories(50, seed=12))],
        name="plays",
    )


@pytest.mark.parametrize("name", list(CASES))
def test_real_tokenizer_release(tmp_path, corpus, name):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    folder, version, code = CASES[name]
    info = resolve_tokenizer(str(folder()))
    out = tmp_path / "release"
    build(plan_build(corpus, info, out, num_proc=2), progress=False)
    report = verify_release(out)
    reference = Tokenizer.from_file(str(folder() / "tokenizer.json"))

    from hf_tokbin.corpus.source import iter_texts
    from hf_tokbin.formats.corpus_manifest import CorpusManifest

    manifest = CorpusManifest.read(corpus)
    for split, parts in (("train", (0, 1)), ("validation", (2,))):
        texts = list(iter_texts(corpus, manifest, split))
        assert report.splits[split].documents == len(texts)
        documents = []
        for part in parts:
            prefix = out / "shards" / split / f"part-{part:06d}"
            assert megatron.read_index_header(f"{prefix}.idx").code == code
            theirs = IndexedDataset(str(prefix))
            # Copy: megatron-core unmaps its files when the dataset object goes away.
            documents.extend(np.array(theirs[i]) for i in range(len(theirs)))
        for text, ids in zip(texts, documents, strict=True):
            assert ids[-1] == info.doc_sep_id
            assert ids[:-1].tolist() == reference.encode(text, add_special_tokens=False).ids

    token_dir = out / "tokens" / info.tokenizer_id / "plays"
    for entry in llmc.TokensManifest.read(token_dir / "_MANIFEST.json").files:
        header = llmc.read_header(token_dir / entry.name)
        assert header.version == version and header.vocab_size == info.vocab_size
