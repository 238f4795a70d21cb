"""One rule for files beside a release, outside its layout (NOTES.md, a LICENSE): they are not part of it.
``verify`` reports them without failing, local and remote; ``push`` leaves them out and names them (``--dry-run`` too).
A file inside the layout that ``COMPLETE.json`` does not list still breaks the release."""

from __future__ import annotations

import json

from hub_server import REPO, cli


def with_notes(release):
    (release / "NOTES.md").write_text("my notes\n")
    (release / "extra").mkdir()
    (release / "extra" / "plot.txt").write_text("a plot\n")
    return release


def test_local_verify_reports_files_outside_the_layout_and_passes(release):
    with_notes(release)
    done = cli(None, "verify", release)
    assert done.returncode == 0, done.stderr
    assert (
        "NOTES.md" in done.stdout and "extra/plot.txt" in done.stdout and "outside the release layout" in done.stdout
    )
    record = json.loads(cli(None, "verify", release, "--json").stdout)
    assert any("NOTES.md" in w for w in record["warnings"]), record


def test_an_unlisted_file_inside_the_layout_still_fails(release):
    (release / "shards" / "train" / "part-000099.bin").write_bytes(b"\0" * 8)
    done = cli(None, "verify", release)
    assert done.returncode == 1 and "part-000099.bin" in done.stderr, done.stderr


def test_push_names_what_it_leaves_out(hub, env, release):
    with_notes(release)
    preview = cli(env, "push", release, "--repo", REPO, "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert "NOTES.md" in preview.stdout and "extra/plot.txt" in preview.stdout, preview.stdout
    done = cli(env, "push", release, "--repo", REPO)
    assert done.returncode == 0, done.stderr
    assert "NOTES.md" in done.stdout and "outside the release layout" in done.stdout, done.stdout
    assert "NOTES.md" not in hub.head_files(REPO)
