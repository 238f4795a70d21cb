"""hf-tokbin verify's defaults."""

from __future__ import annotations

import os

from hf_tokbin.cli import make_parser


def test_verify_checks_one_file_per_core_by_default():
    # A release's per-file checks (id ranges, indices) ran on one thread; verify is a read of every byte.
    args = make_parser("verify").parse_args(["verify", "release"])
    assert args.num_proc == (os.cpu_count() or 1)
