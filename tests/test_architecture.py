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
FORBIDDEN_IN_FORMATS = (
    "huggingface_hub",
    "datasets",
    "fsspec",
    "tqdm",
    "ray",
    "tokenizers",
    "hf_tokbin.hub",
    "hf_tokbin.pipeline",
)


def _imports(path: Path, package_dir: Path = PACKAGE) -> list[str]:
    """Every module ``path`` imports (relative imports resolved), at any depth of the file: function-local imports
    count."""
    return [name for name, _line in _imports_with_lines(path, package_dir)]


def _imports_with_lines(path: Path, package_dir: Path = PACKAGE) -> list[tuple[str, int]]:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    package = ".".join(parts[:-1])  # the package the file is in (an __init__.py's own package)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.append((module, node.lineno))
            found.extend((f"{module}.{alias.name}", node.lineno) for alias in node.names)
    return found


def _module_name(path: Path, package_dir: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(package_dir: Path) -> dict[str, set[str]]:
    """Which module of the package imports which (any import, at any depth of the file), inside packages and across."""
    modules = {_module_name(p, package_dir): p for p in package_dir.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        for imported in _imports(path, package_dir):
            while imported and imported not in modules:  # from pkg.mod import name -> pkg.mod
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                graph.setdefault(name, set()).add(imported)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes in order, the first repeated at the end), or None."""
    state: dict[str, str] = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt] if nxt in stack else [*stack, node, nxt]
            if nxt not in state and (found := visit(nxt, [*stack, nxt])):
                return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def _is_inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def private_imports(package_dir: Path, allowed: dict[str, set[str]] | None = None) -> list[str]:
    """Each private name (``_x``) a module imports from outside the package that owns it.

    ``a.b._c`` is owned by ``a.b``; a private attribute ``_x`` of module ``a.b.m`` by the package ``a.b``.
    ``allowed`` maps a file (relative to the package's parent) to the private names it may import (pinned ones).
    """
    modules = {_module_name(p, package_dir) for p in package_dir.rglob("*.py")}
    packages = {_module_name(p, package_dir) for p in package_dir.rglob("__init__.py")}
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        name = _module_name(path, package_dir)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        rel = path.relative_to(package_dir.parent).as_posix()
        for imported, line in _imports_with_lines(path, package_dir):
            parts = imported.split(".")
            for i, part in enumerate(parts):
                if not part.startswith("_") or part.startswith("__"):
                    continue
                prefix = ".".join(parts[:i])
                # A private module belongs to its package; a private attribute to the package of its module.
                owner = (
                    prefix if ".".join(parts[: i + 1]) in modules or prefix in packages else prefix.rpartition(".")[0]
                )
                if not _is_inside(package, owner) and imported not in (allowed or {}).get(rel, set()):
                    found.append(f"{rel}:{line} imports {imported} (private to {owner or 'its package'})")
    return found


def test_formats_import_nothing_above_them():
    for path in sorted((PACKAGE / "formats").glob("*.py")):
        for module in _imports(path):
            assert not any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN_IN_FORMATS), (
                f"{path.name} imports {module}"
            )
            if module.startswith("hf_tokbin."):
                assert module.split(".")[1] in ("formats", "errors", "_io"), (
                    f"{path.name} imports {module}, above formats/"
                )


TRAINERS_MAY_IMPORT = ("formats", "readers", "errors", "_io")


def test_trainers_stand_on_formats_and_readers_and_verify_holds_no_trainer():
    """Trainer knowledge (flags, limits, recipes) sits above the formats and readers, and nowhere in verify/."""
    for path in sorted((PACKAGE / "trainers").glob("*.py")):
        for module in _imports(path):
            if module.startswith("hf_tokbin."):
                part = module.split(".")[1]
                assert part in (*TRAINERS_MAY_IMPORT, "trainers"), f"trainers/{path.name} imports {module}"
    for path in sorted((PACKAGE / "verify").glob("*.py")):
        assert not any(_is_inside(m, "hf_tokbin.trainers") for m in _imports(path)), (
            f"verify/{path.name} imports trainers"
        )
    assert not (PACKAGE / "verify" / "compat.py").exists() and not (PACKAGE / "verify" / "recipe.py").exists()


def package_graph() -> dict[str, set[str]]:
    """Which top-level parts of hf_tokbin each part imports (the package root, the old-path shims and ``__main__`` left
    out)."""
    parts = {
        p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        part = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for module in _imports(path):
            target = module.split(".")[1] if module.startswith("hf_tokbin.") else None
            if target in parts and target != part:  # `from .. import __version__` is the package root's
                graph.setdefault(part, set()).add(target)
    for top in ("__init__", "llmc", "megatron", "__main__"):
        graph.pop(top, None)
    return graph


def test_no_import_cycle_between_packages():
    """The graph of the parts has no cycle (the CLI sits on top of everything)."""
    graph = package_graph()
    graph.pop("cli", None)
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_docs_architecture_lists_the_arrows_as_they_are():
    """docs/architecture.md's table of imports is the tree's, arrow for arrow."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split(
        "<!-- imports: generated from the tree, checked by tests/test_architecture.py -->\n```text\n", 1
    )[1].split("```", 1)[0]
    documented = {
        line.split(" -> ")[0].strip(): set(line.split(" -> ")[1].split(", ")) for line in block.strip().splitlines()
    }
    actual = package_graph()
    assert documented == actual, "\n".join(f"{k} -> {', '.join(sorted(v))}" for k, v in sorted(actual.items()))


def test_no_import_cycle_between_modules_counting_function_local_imports():
    """Inside each package too: a cycle hidden by an import inside a function is still a cycle."""
    assert find_cycle(module_graph(PACKAGE)) is None, " -> ".join(find_cycle(module_graph(PACKAGE)))


def test_no_private_name_is_imported_across_packages():
    """A ``_name`` is used only inside the package that owns it; the pinned private APIs of datasets and
    huggingface_hub only in corpus/private_apis.py (tests/corpus/test_private_apis.py pins them)."""
    from hf_tokbin.corpus.private_apis import PINNED, PINNED_TABLES

    pinned = {f"{module}.{name.split('.')[0]}" for module, name, _ in PINNED} | {
        f"{module}.{name}" for module, name in PINNED_TABLES
    }
    assert private_imports(PACKAGE, {"hf_tokbin/corpus/private_apis.py": pinned}) == []


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "pkg"


def test_the_cycle_check_sees_a_cycle_hidden_by_a_function_local_import(tmp_path):
    package = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "from .b import x\n",
            "pkg/sub/b.py": "def x():\n    from . import c\n",
            "pkg/sub/c.py": "def y():\n    from .a import x\n",
        },
    )
    assert find_cycle(module_graph(package)) == ["pkg.sub.a", "pkg.sub.b", "pkg.sub.c", "pkg.sub.a"]


def test_the_private_name_check_sees_a_name_taken_from_another_package(tmp_path):
    package = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/_io.py": "",
            "pkg/one/__init__.py": "",
            "pkg/one/m.py": "_rule = 1\n",
            "pkg/one/n.py": "from .m import _rule\nfrom .._io import x\n",  # same package; pkg's own private module
            "pkg/two.py": "def f():\n    from .one.m import _rule\n    from huggingface_hub.file_download import "
                "_cache\n",
        },
    )
    assert private_imports(package) == [
        "pkg/two.py:2 imports pkg.one.m._rule (private to pkg.one)",
        "pkg/two.py:3 imports huggingface_hub.file_download._cache (private to huggingface_hub)",
    ]


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
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\ntry:\n    import "
        f"hf_tokbin.{shim}\nexcept DeprecationWarning as e:\n    print(e)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert f"hf_tokbin.{shim} is deprecated: import hf_tokbin.formats.{shim}" in result.stdout, result.stderr
    source = (PACKAGE / "cards" / "release.py").read_text() + (
        PACKAGE.parent / "dataset_card" / "release_card.md"
    ).read_text()
    assert f"hf_tokbin.{shim}." not in source and f"from hf_tokbin.{shim} import" not in source
    assert not any(
        f"hf_tokbin.{shim}" in line and "formats" not in line for line in source.splitlines() if "import" in line
    )


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
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), command, str(tmp_path / "corpus")], capture_output=True, text=True, timeout=120
    )
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
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "verify", str(tmp_path / "corpus")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1 and str(shard) in result.stderr and "SHA-256" in result.stderr


def test_the_package_docstring_s_api_is_reachable_after_a_plain_import():
    """``help(hf_tokbin)`` shows the main job; every name it uses is reachable from ``import hf_tokbin`` alone."""
    code = (
        "import hf_tokbin, sys\n"
        "assert 'datasets' not in sys.modules  # the root import stays light\n"
        "for name in ('build_release', 'verify_release', 'write_tinystories_corpus', 'resolve_tokenizer', "
        "'plan_build'):\n"
        "    assert callable(getattr(hf_tokbin, name)), name\n"
        "assert callable(hf_tokbin.hub.push_folder) and callable(hf_tokbin.pipeline.build)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_a_build_part_worker_does_not_load_datasets():
    """A part reads its shard through corpus.source (a ShardSource); that must not import the corpus writer's
    datasets."""
    code = (
        "import sys, hf_tokbin.pipeline.encode, hf_tokbin.corpus.source\n"
        "assert 'datasets' not in sys.modules, 'datasets imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


ENCODE_STEP = "hf_tokbin.pipeline.encode"
# Trainers' code (flags, limits, recipes) is under verify/ today, or a hf_tokbin.trainers package.
NOT_IN_THE_ENCODE_STEP = ("hf_tokbin.verify", "hf_tokbin.hub", "hf_tokbin.trainers")


def import_closure(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module loading ``start`` loads, each with the module that imports it: what it imports at any depth of
    its file (function-local imports count), and the packages above each one (their ``__init__`` runs first)."""
    via, todo = {start: ""}, [start]
    while todo:
        module = todo.pop()
        parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        for imported in sorted(graph.get(module, set()) | parents):
            if imported not in via:
                via[imported] = module
                todo.append(imported)
    return via


def test_the_encode_step_loads_no_trainer_verify_or_hub_code():
    """A worker that runs step 1 (one corpus shard to its pair, segment and receipt) imports none of the trainers',
    verify's or the Hub's modules: the card and the checks belong to step 2, the Hub to planning."""
    via = import_closure(module_graph(PACKAGE), ENCODE_STEP)
    found = []
    for module in sorted(m for m in via if m.startswith(NOT_IN_THE_ENCODE_STEP)):
        chain = [module]
        while via[chain[-1]]:
            chain.append(via[chain[-1]])
        found.append(" <- ".join(chain))
    assert found == []
    assert "hf_tokbin.tokenizer.encoder" in via and "hf_tokbin.pipeline.plan" in via  # the closure is the step's


def test_importing_the_encode_step_loads_no_trainer_verify_or_hub_code():
    code = (
        f"import sys, {ENCODE_STEP}\n"
        f"print(sorted(m for m in sys.modules if m.startswith({NOT_IN_THE_ENCODE_STEP!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_every_function_is_under_60_lines():
    """Short functions, each one thing (``def`` to its last line, docstring included)."""
    import ast

    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 >= 60:
                long.append(
                    f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} "
                    f"({node.end_lineno - node.lineno + 1} lines)"
                )
    assert not long, long


def test_every_package_is_listed_for_the_wheel():
    """pyproject.toml lists the packages by name: a package missing there is missing from an installed hf_tokbin."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {_module_name(p, PACKAGE) for p in PACKAGE.rglob("__init__.py")}
    assert found - listed == set()
