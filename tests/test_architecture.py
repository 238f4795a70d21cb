"""The tree is the architecture: formats at the bottom, no import cycles, old import paths kept, dispatch by content."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hf_tokbin
from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.formats import megatron

PACKAGE = Path(hf_tokbin.__file__).parent
CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")
FORBIDDEN_IN_FORMATS = ("huggingface_hub", "datasets", "fsspec", "tqdm", "ray", "tokenizers", "hf_tokbin.hub", "hf_tokbin.pipeline")


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports (relative imports resolved), at any depth of the file."""
    package = ".".join(path.relative_to(PACKAGE.parent).parts[:-1])  # the package the file is in
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.append(module)
            found.extend(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_formats_import_nothing_above_them():
    for path in sorted((PACKAGE / "formats").glob("*.py")):
        for module in _imports(path):
            assert not any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN_IN_FORMATS), f"{path.name} imports {module}"
            if module.startswith("hf_tokbin."):
                assert module.split(".")[1] in ("formats", "errors", "_io"), f"{path.name} imports {module}, above formats/"


def test_no_import_cycle_between_packages():
    """Which top-level parts of hf_tokbin each part imports: the graph has no cycle."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        part = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for module in _imports(path):
            if module.startswith("hf_tokbin.") and module.split(".")[1] != part:
                graph.setdefault(part, set()).add(module.split(".")[1])
    # The package root and the old-path shims re-export; the CLI sits on top of everything.
    for top in ("__init__", "llmc", "megatron", "cli", "__main__"):
        graph.pop(top, None)
    seen, done = set(), set()

    def visit(node, stack):
        assert node not in stack, f"import cycle: {' -> '.join([*stack, node])}"
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, [*stack, node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
        seen.add(node)


def test_old_import_paths_of_released_cards_keep_working(tmp_path):
    import warnings

    with warnings.catch_warnings():  # they warn (DeprecationWarning) on first import: the test below
        warnings.simplefilter("ignore", DeprecationWarning)
        from hf_tokbin.llmc import open_tokens, write_tokens
        from hf_tokbin.megatron import MegatronPair, MegatronWriter

    write_tokens(tmp_path / "t.bin", [1, 2, 3], 256)
    assert open_tokens(tmp_path / "t.bin").tolist() == [1, 2, 3]
    with MegatronWriter(tmp_path / "p.bin", 256, 0) as writer:
        writer.add_document([5, 6])
    assert MegatronPair(tmp_path / "p.bin")[0].tolist() == [5, 6, 0]


@pytest.mark.parametrize("shim", ["llmc", "megatron"])
def test_the_old_import_paths_warn_and_no_new_card_cites_them(shim, tmp_path):
    code = f"import warnings; warnings.simplefilter('error', DeprecationWarning)\ntry:\n    import hf_tokbin.{shim}\nexcept DeprecationWarning as e:\n    print(e)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert f"hf_tokbin.{shim} is deprecated: import hf_tokbin.formats.{shim}" in result.stdout, result.stderr
    source = (PACKAGE / "cards" / "release.py").read_text() + (PACKAGE.parent / "dataset_card" / "release_card.md").read_text()
    assert f"hf_tokbin.{shim}." not in source and f"from hf_tokbin.{shim} import" not in source
    assert not any(f"hf_tokbin.{shim}" in line and "formats" not in line for line in source.splitlines() if "import" in line)


def test_megatron_writer_commits_on_a_clean_exit_like_the_llmc_writer(tmp_path):
    with megatron.MegatronWriter(tmp_path / "p.bin", 256, 0) as writer:
        writer.add_documents(np.array([1, 2, 3]), np.array([2, 1]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.bin", "p.idx"]  # no .tmp files left
    pair = megatron.MegatronPair(tmp_path / "p.bin")
    assert [pair[i].tolist() for i in range(len(pair))] == [[1, 2, 0], [3, 0]]
    assert writer.close().n_documents == 2  # close() after the block returns the same pair


def test_megatron_writer_drops_the_pair_on_an_exception(tmp_path):
    with pytest.raises(RuntimeError):
        with megatron.MegatronWriter(tmp_path / "p.bin", 256, 0) as writer:
            writer.add_document([1])
            raise RuntimeError
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["info", "verify"])
def test_info_and_verify_of_a_corpus_folder_read_it_as_a_corpus(tmp_path, command):
    """Both formats name their record _MANIFEST.json: dispatch goes by the record's format key, not the name."""
    text = tmp_path / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    result = subprocess.run([str(CONSOLE_SCRIPT), command, str(tmp_path / "corpus")], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    assert "corpus" in result.stdout and "manifest keys" not in result.stdout
    if command == "verify":
        assert "OK: corpus tinystories, 1 shards, documents: train 2, validation 0" in result.stdout


def test_verify_of_a_corpus_folder_notices_a_changed_shard(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    shard = next((tmp_path / "corpus" / "data").glob("*.parquet"))
    data = bytearray(shard.read_bytes())
    data[-10] ^= 1
    shard.write_bytes(bytes(data))
    result = subprocess.run([str(CONSOLE_SCRIPT), "verify", str(tmp_path / "corpus")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and str(shard) in result.stderr and "SHA-256" in result.stderr


def test_the_package_docstring_s_api_is_reachable_after_a_plain_import():
    """``help(hf_tokbin)`` shows the main job; every name it uses is reachable from ``import hf_tokbin`` alone."""
    code = (
        "import hf_tokbin, sys\n"
        "assert 'datasets' not in sys.modules  # the root import stays light\n"
        "for name in ('build_release', 'verify_release', 'write_tinystories_corpus', 'resolve_tokenizer', 'plan_build'):\n"
        "    assert callable(getattr(hf_tokbin, name)), name\n"
        "assert callable(hf_tokbin.hub.push_folder) and callable(hf_tokbin.pipeline.build)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
