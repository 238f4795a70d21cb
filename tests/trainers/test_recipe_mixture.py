"""``hf-tokbin recipe`` for a mixture release: the Megatron-LM and MaxText blends give each source its share.

A mixture of three corpora of uneven sizes (English, French and code; GPT-2's
tokenizer) is built with ``--tokens`` chosen so that code, the smallest, is
drawn about 1.5 times. The printed Megatron blend goes through megatron-core's
own ``BlendedMegatronDatasetBuilder`` and ``GPTDataset``: over the printed
train samples, each source's share of the samples is its share of the mix.
"""

from __future__ import annotations

import json
import random
import shlex
from fractions import Fraction

import numpy as np
import pytest
from release_fixtures import stories, write_corpus
from tokenizer_files import GPT2_EOS_ID, gpt2_tokenizer_json

import hf_tokbin
from hf_tokbin.cli import main
from hf_tokbin.errors import FormatError
from hf_tokbin.formats.mixture import MixtureSpec
from hf_tokbin.formats.release import Receipt
from hf_tokbin.trainers import LoaderSettings, check, recipe
from hf_tokbin.trainers.megatron_pairs import mixture_total

MIX = "en=0.5,fr=0.3,code=0.2"
SHARES = {"en": Fraction(1, 2), "fr": Fraction(3, 10), "code": Fraction(1, 5)}
CODE_EPOCHS = Fraction(3, 2)  # --tokens makes the code source repeat about this often (--max-epochs 2)
S = LoaderSettings(batch_size=4, seq_len=32)
FRENCH = "le la les un une chat chien maison jardin soleil mange court voit était avec pour très petit grand".split()


def french(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(FRENCH) for _ in range(rng.randint(20, 160))) + "." for _ in range(n)]


def code(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "\n".join(f"def f{i}_{k}(x):\n    return x * {rng.randint(0, 99)} + {k}" for k in range(rng.randint(1, 6)))
        for i in range(n)
    ]


def tokens(texts: list[str]) -> int:
    """The Megatron tokens of the texts: GPT-2's ids and one EOD each."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(gpt2_tokenizer_json() / "tokenizer.json"))
    return sum(len(e.ids) + 1 for e in tokenizer.encode_batch(texts, add_special_tokens=False))


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    """A 3-source mixture release (1,500 / 400 / 200 train documents; Megatron pairs), code drawn about 1.5 times."""
    tmp = tmp_path_factory.mktemp("mixture")
    train = {
        "en": [stories(600, 1), stories(500, 2), stories(400, 3)],
        "fr": [french(250, 4), french(150, 5)],
        "code": [code(200, 6)],
    }
    validation = {"en": stories(40, 7), "fr": french(20, 8), "code": code(10, 9)}
    corpora = [
        write_corpus(tmp / name, [*(("train", t) for t in shards), ("validation", validation[name])], name=name)
        for name, shards in train.items()
    ]
    total = int(CODE_EPOCHS * tokens(train["code"][0]) / SHARES["code"])
    spec = MixtureSpec.parse(MIX, total, max_epochs=2)
    out = tmp / "release"
    hf_tokbin.build_release(corpora, gpt2_tokenizer_json(), out, mix=spec, formats=("megatron",), progress=False)
    return out, total


def receipts(root):
    return [Receipt.read(path) for path in sorted((root / "receipts").glob("part-*.json"))]


def pair_sources(root, split: str) -> dict[str, tuple[str, int]]:
    """Each pair prefix of ``split``: (its source, its tokens), from the receipts."""
    found = {}
    for r in receipts(root):
        if split in r.splits:
            (source,) = r.sources
            found[str(root / "shards" / split / r.part)] = (source, r.splits[split].total_tokens)
    return found


def megatron_argv(r) -> list[str]:
    return shlex.split(" ".join(line.rstrip("\\") for line in r.lines))


def flag_values(argv: list[str], flag: str) -> list[str]:
    start = argv.index(flag) + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("--")), len(argv))
    return argv[start:end]


def maxtext_blend(r, key: str) -> list[tuple[str, str]]:
    """(prefix, weight) of each spec of MaxText's ``IDX|PREFIX,WEIGHT;...`` value of ``key``."""
    (line,) = [shlex.split(line.rstrip("\\"))[0] for line in r.lines if line.lstrip("'").startswith(key + "=")]
    specs = [spec.rpartition(",") for spec in line.partition("=")[2].split(";")]
    return [(spec.partition("|")[2], weight) for spec, _, weight in specs]


def test_printed_train_weights_give_each_source_its_share(mixture):
    root, total = mixture
    argv = megatron_argv(recipe(root, "megatron", S))
    train = flag_values(argv, "--train-data-path")
    sources = pair_sources(root, "train")
    assert [train[i] for i in range(1, len(train), 2)] == list(sources)  # every train pair, in part order
    source_tokens = {name: sum(n for s, n in sources.values() if s == name) for name in SHARES}
    by_source = dict.fromkeys(SHARES, 0.0)
    for weight, prefix in zip(train[0::2], train[1::2]):
        source, n = sources[prefix]
        assert float(weight) == pytest.approx(float(SHARES[source] * n / source_tokens[source]), rel=1e-11)
        by_source[source] += float(weight)
    assert by_source == pytest.approx({name: float(share) for name, share in SHARES.items()}, abs=1e-11)
    assert int(flag_values(argv, "--train-samples")[0]) == total // S.seq_len  # the mixture's T tokens
    # Validation: every validation pair by its tokens, as without a mixture.
    valid = flag_values(argv, "--valid-data-path")
    expected = [x for prefix, (_, n) in pair_sources(root, "validation").items() for x in (str(n), prefix)]
    assert valid == expected and len(valid) == 6


def test_maxtext_blend_is_megatrons(mixture):
    root, total = mixture
    argv = megatron_argv(recipe(root, "megatron", S))
    r = recipe(root, "maxtext", S)
    for key, flag in (("grain_train_files", "--train-data-path"), ("grain_eval_files", "--valid-data-path")):
        megatron = flag_values(argv, flag)
        assert maxtext_blend(r, key) == list(zip(megatron[1::2], megatron[0::2]))
    (steps,) = [line for line in r.lines if line.startswith("steps=")]
    assert int(steps.rstrip(" \\").partition("=")[2]) == total // S.seq_len // S.batch_size


def test_notes_say_the_shares_the_repeats_and_the_validation_blend(mixture):
    root, _ = mixture
    for target in ("megatron", "maxtext"):
        notes = " ".join(recipe(root, target, S).notes)
        assert "en=0.5 (" in notes and "fr=0.3 (" in notes and "code=0.2 (1.50 epochs)" in notes
        assert "up to the build's --max-epochs 2" in notes
        assert "every validation document of every source" in notes


def test_epochs_is_refused_for_a_mixture_in_one_line(mixture, capsys):
    root, _ = mixture
    for target in ("megatron", "maxtext"):
        with pytest.raises(FormatError, match="--epochs applies to a release without a mixture"):
            recipe(root, target, LoaderSettings(epochs=2))
        assert main(["recipe", str(root), "--for", target, "--epochs", "2"]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--epochs" in err and "Traceback" not in err


def test_verify_for_megatron_and_maxtext_finds_no_error_on_a_mixture(mixture, capsys):
    root, _ = mixture
    for target in ("megatron", "maxtext"):
        assert not [f for f in check(root, target, S) if f.level == "error"]
    # verify itself takes a mixture's receipts, each counting its part's source, for counted by source.
    main(["verify", str(root)])
    assert "counts sources" not in capsys.readouterr().err


def test_the_card_shows_the_mixture_blend(mixture):
    root, _ = mixture
    card = (root / "README.md").read_text(encoding="utf-8")
    first = next(iter(pair_sources(root, "train")))
    weight = flag_values(megatron_argv(recipe(root, "megatron")), "--train-data-path")[0]
    assert "." in weight and f"--train-data-path {weight} {first.replace(str(root), 'RELEASE')}" in card


def test_mixture_total_is_the_total_stats_json_names(mixture, tmp_path):
    root, total = mixture
    assert mixture_total(root) == total
    stats = json.loads((root / "stats.json").read_text(encoding="utf-8"))
    del stats["mixture"]["tokens"]
    (tmp_path / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    with pytest.raises(FormatError, match="stats.json names its train total: mixture.tokens"):
        mixture_total(tmp_path)


@pytest.mark.slow
def test_megatron_core_draws_each_source_its_share(mixture):
    pytest.importorskip("megatron.core.datasets.blended_megatron_dataset_builder")
    import torch.distributed as dist
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer

    root, _ = mixture
    argv = megatron_argv(recipe(root, "megatron", S))
    train, valid = flag_values(argv, "--train-data-path"), flag_values(argv, "--valid-data-path")
    samples = int(flag_values(argv, "--train-samples")[0])
    assert flag_values(argv, "--tokenizer-type") == ["NullTokenizer"]
    tokenizer = NullTokenizer(int(flag_values(argv, "--vocab-size")[0]))
    assert tokenizer.eod == GPT2_EOS_ID
    config = GPTDatasetConfig(
        random_seed=int(flag_values(argv, "--seed")[0]),
        sequence_length=int(flag_values(argv, "--seq-length")[0]),
        blend_per_split=[get_blend_from_list(train), get_blend_from_list(valid), None],
        path_to_cache=None,
        tokenizer=tokenizer,
        reset_position_ids=True,
        reset_attention_mask=True,
        eod_mask_loss=False,
    )
    assert not dist.is_initialized()
    evaluated = int(flag_values(argv, "--eval-iters")[0]) * int(flag_values(argv, "--global-batch-size")[0])
    sizes = [samples, evaluated, None]
    train_ds, valid_ds, _ = BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, config).build()
    assert len(train_ds) >= samples and len(valid_ds) >= evaluated > 0
    sources = pair_sources(root, "train")
    pair_source = np.array([sources[prefix][0] for prefix in train[1::2]])
    drawn = pair_source[np.asarray(train_ds.dataset_index[:samples])]
    for name, share in SHARES.items():
        assert abs(np.mean(drawn == name) - float(share)) < 0.01, name
    # code is drawn past its tokens: more samples than one epoch of it holds, fewer than the cap of 2 epochs.
    (code_tokens,) = [n for source, n in sources.values() if source == "code"]
    one_epoch = (code_tokens - 1) // S.seq_len
    assert 1.3 * one_epoch < np.sum(drawn == "code") < 2 * one_epoch
