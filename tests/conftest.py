"""Shared test set-up.

The tests mirror the package: ``tests/formats/`` tests ``hf_tokbin/formats/``,
and so on; the helpers they share (test servers, tokenizer files, fixtures)
live here at the top. Import paths: this folder and each test folder (tests
share a few fixtures across folders by module name; every test file's name is
unique), and ``scripts/``, for the TinyStories rules' reader and encoder
(``scripts/tinystories_reference.py``).
"""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# The build's own cache (URL scratch folders, the fast-path proof) goes to a folder of this test session,
# never to the user's ~/.cache/hf_tokbin; a test that needs a cache of its own sets HF_TOKBIN_CACHE itself.
if "HF_TOKBIN_CACHE" not in os.environ:
    os.environ["HF_TOKBIN_CACHE"] = tempfile.mkdtemp(prefix="hf_tokbin-test-cache-")
    atexit.register(shutil.rmtree, os.environ["HF_TOKBIN_CACHE"], ignore_errors=True)

# Property tests are deterministic: the same examples on every run and machine, and no example database
# (a fresh clone once failed on a counterexample the developer's database had never seen). No deadline: Hypothesis'
# default fails an example that takes over 200 ms (and its too_slow health check then allows 1 s of data generation),
# which a busy machine reaches with no fault in the code; a test that sets its own settings inherits this.
from hypothesis import settings  # noqa: E402

settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

TESTS = Path(__file__).resolve().parent
for folder in [
    TESTS.parent / "scripts",
    TESTS,
    *sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in ("data", "golden", "__pycache__")),
]:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


# Small releases that the verify and card tests tamper with (tests/release_edits.py); built once per module.
import pytest  # noqa: E402
from release_edits import build as build_small_release  # noqa: E402


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Path:
    return build_small_release(tmp_path_factory.mktemp("both"), "--max-tokens-per-file", "40")


@pytest.fixture(scope="module")
def llmc_bos(tmp_path_factory) -> Path:
    return build_small_release(tmp_path_factory.mktemp("llmc"), "--format", "llmc", "--bos", "2")


@pytest.fixture
def copy(both, tmp_path) -> Path:
    return Path(shutil.copytree(both, tmp_path / "release"))


@pytest.fixture
def llmc_copy(llmc_bos, tmp_path) -> Path:
    return Path(shutil.copytree(llmc_bos, tmp_path / "release"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A real release (verify accepts it), built once per module; tests take copies (``release``)."""
    from release_fixtures import build_release

    return build_release(tmp_path_factory.mktemp("built"))


@pytest.fixture
def release(built, tmp_path):
    import shutil

    return shutil.copytree(built, tmp_path / "release")
