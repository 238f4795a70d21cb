"""A full disk during a build: one line naming the file (or the folder) being written, nothing that looks complete,
a re-run after freeing space gives the same bytes.

The real proof is a real full disk: a small tmpfs (these tests run as root;
if the mount fails, the test fails) whose free space a ballast file sets to
a fraction of the release's size, so the build must run out of space at
some point before its end. ENOSPC is also injected into a single file
(``COMPLETE.json``, written last) by replacing the writer's file object.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin import _io
from hf_tokbin.cli import main
from hf_tokbin.engines.ray import _run_task, _task_result, package_versions
from hf_tokbin.errors import BuildError
from hf_tokbin.tokenizer import train_bpe

TMPFS_BYTES = 64 << 20
NO_SPACE = "[Errno 28] No space left on device"
HINT = (
    "(HINT: free space on that disk, then run the same command again: finished parts are kept, partial files are not)"
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("disk_full")
    train_bpe(stories(300, seed=1), 600, root / "tok")
    write_corpus(
        root / "corpus",
        [
            ("train", stories(6000, seed=3, max_words=150)),
            ("train", stories(3000, seed=4, max_words=150)),
            ("validation", stories(1000, seed=5)),
        ],
    )
    return root


def build_args(inputs: Path, out: Path) -> list[str]:
    return [
        "build",
        "--corpus",
        str(inputs / "corpus"),
        "--tokenizer",
        str(inputs / "tok"),
        "--out",
        str(out),
        "--quiet",
    ]


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("reference") / "release"
    assert main(build_args(inputs, out)) == 0
    return tree_bytes(out)


@contextlib.contextmanager
def small_disk(folder: Path, size: int):
    """A tmpfs of ``size`` bytes mounted at ``folder`` (root needed: a failed mount fails the test)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True, capture_output=True
    )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def free_bytes(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def fill_until_free(ballast: Path, free: int) -> None:
    """Make the disk of ``ballast`` have about ``free`` bytes left."""
    with open(ballast, "wb") as file:
        os.posix_fallocate(file.fileno(), 0, free_bytes(ballast.parent) - free)


def leftovers_that_look_complete(out: Path) -> list[str]:
    """Files under a final name that a reader could take for complete: COMPLETE.json, and receipts or pairs of parts
    not done."""
    found = []
    if (out / "COMPLETE.json").exists():
        found.append("COMPLETE.json")
    receipts = {p.stem for p in (out / "receipts").glob("*.json")} if (out / "receipts").is_dir() else set()
    for pair in out.glob("shards/*/part-*.bin"):
        if pair.stem not in receipts:
            found.append(pair.relative_to(out).as_posix())
    return found


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.7, 0.97])
def test_a_full_tmpfs_is_one_line_and_a_rerun_after_freeing_space_gives_the_same_bytes(
    inputs, reference, tmp_path, capsys, fraction
):
    release_size = sum(len(data) for data in reference.values())
    with small_disk(tmp_path / "disk", TMPFS_BYTES) as disk:
        ballast = disk / "ballast"
        fill_until_free(ballast, int(release_size * fraction))  # less than the release itself: the build cannot end
        out = disk / "release"
        assert main(build_args(inputs, out)) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        # the file being written when it is known, else the --out folder
        assert lines[0].startswith(f"hf-tokbin build: error: {out}")
        assert lines[0].endswith(f": writing needs free space on the disk: got {NO_SPACE} {HINT}")
        assert leftovers_that_look_complete(out) == []
        assert [p.name for p in out.rglob(f"*{_io.TMP_SUFFIX}")] == []  # no half-written file either
        ballast.unlink()
        assert main(build_args(inputs, out)) == 0
        assert tree_bytes(out) == reference


def test_disk_full_while_writing_complete_json_names_it_and_leaves_none(
    inputs, reference, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "release"
    real_create = _io.create_file

    class FullDisk:
        """The file object of COMPLETE.json's temporary: every write fails as on a full disk."""

        def __init__(self, file):
            self._file = file

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self._file, name)

    def create_with_full_disk(path, *args, **kwargs):
        file = real_create(path, *args, **kwargs)
        return FullDisk(file) if Path(path).name == ".COMPLETE.json.tmp" else file

    monkeypatch.setattr(_io, "create_file", create_with_full_disk)  # the one way _io's writers create a file
    assert main(build_args(inputs, out)) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"hf-tokbin build: error: {out / 'COMPLETE.json'}: writing needs free space on the disk: got {NO_SPACE} {HINT}"
    ]
    assert not (out / "COMPLETE.json").exists()
    assert not (out / ".COMPLETE.json.tmp").exists()
    monkeypatch.undo()
    assert main(build_args(inputs, out)) == 0
    assert tree_bytes(out) == reference


def test_atomic_open_names_the_file_whatever_step_fails(tmp_path, monkeypatch):
    def full_fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_io.os, "fsync", full_fsync)
    with pytest.raises(OSError) as caught:
        _io.write_text_atomic(tmp_path / "stats.json", "{}\n")
    assert caught.value.filename == str(tmp_path / "stats.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def disk_full_inside_datasets(filename=None):
    """The error datasets raises when its writer hits a full disk: the OSError is only the cause."""
    from datasets.exceptions import DatasetGenerationError

    try:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), *([filename] if filename else []))
    except OSError as e:
        try:
            raise DatasetGenerationError("An error occurred while generating the dataset") from e
        except DatasetGenerationError as wrapped:
            return wrapped


def test_disk_full_cause_is_found_behind_a_library_error_and_only_there():
    wrapped = disk_full_inside_datasets()
    assert _io.disk_full_cause(wrapped).errno == errno.ENOSPC
    error = _io.disk_full_error(wrapped, "out")
    assert str(error) == f"out: writing needs free space on the disk: got {NO_SPACE} {HINT}"
    assert (
        _io.disk_full_error(OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), "f.bin")).rule
        == "writing needs free disk quota"
    )
    for other in (OSError(errno.EIO, "I/O error"), ValueError("x"), FileNotFoundError(errno.ENOENT, "missing", "f")):
        assert _io.disk_full_cause(other) is None


def test_a_library_error_not_caused_by_a_full_disk_still_shows_its_traceback(monkeypatch):
    from datasets.exceptions import DatasetGenerationError

    from hf_tokbin.cli import info

    def run(args):
        raise DatasetGenerationError("a bug") from ValueError("not a disk")

    monkeypatch.setattr(info, "run", run)
    with pytest.raises(DatasetGenerationError):
        main(["info", "anything"])


def test_ray_task_sends_the_full_disks_oserror_not_the_wrapper_and_the_driver_prints_one_line(tmp_path):
    def part_on_a_full_disk(plan, index):
        raise disk_full_inside_datasets()

    with pytest.raises(OSError) as caught:
        _run_task(part_on_a_full_disk, None, 4, package_versions())
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.__cause__ is None  # it pickles whole

    class RayTaskError(Exception):
        def __init__(self, cause):
            self.cause = cause

    def ray_failing_with(cause):
        """Just what _task_result uses of ray: get() raising a task's error, and the exception classes."""

        def get(ref):
            raise RayTaskError(cause)

        return SimpleNamespace(get=get, exceptions=SimpleNamespace(RayTaskError=RayTaskError, RayError=Exception))

    named = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/out/shards/train/part-000004.bin")
    with pytest.raises(BuildError) as failed:
        _task_result(ray_failing_with(named), None, 4, 3)
    assert (
        str(failed.value)
        == f"/out/shards/train/part-000004.bin: writing needs free space on the disk: got {NO_SPACE} {HINT}"
    )
    with pytest.raises(BuildError, match="^input shard 4: writing needs free space on the disk"):
        _task_result(ray_failing_with(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))), None, "input shard 4", 3)
