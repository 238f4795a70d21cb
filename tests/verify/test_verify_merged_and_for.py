"""``verify`` accepts merge's own output; ``verify --for TRAINER`` checks every byte as well as the trainer's rules."""

from __future__ import annotations

from hub_server import cli


def flip_a_byte(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_verify_accepts_a_merged_folder_and_names_a_changed_pair(release, tmp_path):
    merged = tmp_path / "merged"
    assert cli(None, "merge", release, "--out", merged).returncode == 0
    done = cli(None, "verify", merged)
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stdout and "train" in done.stdout and "None" not in done.stdout + done.stderr
    info = cli(None, "info", merged)
    assert info.returncode == 0 and "train" in info.stdout and "validation" in info.stdout, info.stderr
    flip_a_byte(merged / "train.bin")
    broken = cli(None, "verify", merged)
    assert broken.returncode == 1 and "train.bin" in broken.stderr and "MERGED.json" in broken.stderr, broken.stderr


def test_verify_for_a_trainer_still_finds_a_flipped_byte(release):
    flip_a_byte(release / "shards" / "train" / "part-000000.bin")
    done = cli(None, "verify", "--for", "megatron", release)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "part-000000.bin" in done.stdout + done.stderr and "0 error(s)" not in done.stdout, done.stdout + done.stderr
