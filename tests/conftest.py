"""Shared test set-up.

The tests mirror the package: ``tests/formats/`` tests ``hf_tokbin/formats/``,
and so on; the helpers they share (test servers, tokenizer files, fixtures)
live here at the top. Import paths: this folder and each test folder (tests
share a few fixtures across folders by module name; every test file's name is
unique), and ``scripts/``, for seed 002's reference encoder (``scripts/seed002.py``).
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
# (a fresh clone once failed on a counterexample the developer's database had never seen).
from hypothesis import settings  # noqa: E402

settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

TESTS = Path(__file__).resolve().parent
for folder in [TESTS.parent / "scripts", TESTS, *sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in ("data", "golden", "__pycache__"))]:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
