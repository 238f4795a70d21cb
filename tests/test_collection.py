"""Every test file on disk is collected by the README's test command.

pytest skips folders that match ``norecursedirs`` (by default ``build``,
``dist``, ...): ``tests/build/`` once held 113 tests that never ran in CI.
"""

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_file_on_disk_is_collected():
    on_disk = {
        p.relative_to(TESTS.parent).as_posix() for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts
    }
    # The README's test command from the repository root, collection only.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    collected = {line.split("::", 1)[0] for line in result.stdout.splitlines() if "::" in line}
    missing = sorted(on_disk - collected)
    assert not missing, f"test files pytest does not collect: {missing}"
    assert "tests/pipeline/test_build.py" in collected


def test_no_test_module_imports_another():
    """Shared helpers live in helper modules and conftest fixtures, never in a test module another imports."""
    offenders = [
        f"{p.relative_to(TESTS.parent)}: {line.strip()}"
        for p in TESTS.rglob("*.py")
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.startswith(("from test_", "import test_", "from conftest", "import conftest"))
    ]
    assert not offenders, offenders
