"""``hf-tokbin corpus``'s summary: sizes and the read rate in units that say something for any input size."""

from __future__ import annotations

import json
import re

import pytest

from hf_tokbin.cli import main
from hf_tokbin.cli.corpus import read_summary


@pytest.mark.parametrize(
    "size, seconds, line",
    [
        (2_000, 0.5, "read 2,000 bytes in 0.5 s (4.00kB/s)"),  # a tiny input: no "0.0 MB in 0.5 s (0.0 MB/s)"
        (2_000, 0.004, "read 2,000 bytes in 4 ms (500kB/s)"),
        (123_456_789, 10.0, "read 123.5 MB in 10.0 s (12.3MB/s)"),
        (5_000_000_000, 2.0, "read 5,000.0 MB in 2.0 s (2.50GB/s)"),
        (500, 0.0, "read 500 bytes in 0 ms"),  # no time measured: no rate
    ],
)
def test_the_read_line_scales_its_units_as_tqdm_does(size, seconds, line):
    assert read_summary(size, seconds) == line


def test_corpus_import_of_a_tiny_input_prints_a_rate_that_is_not_zero(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"story {i}"}) + "\n" for i in range(3)))
    assert main(["corpus", "import", str(rows), "--out", str(tmp_path / "corpus"), "--quiet"]) == 0
    err = capsys.readouterr().err
    found = re.search(r"^read ([\d,]+) bytes in [\d.]+ m?s \(([\d.]+)(|k|M|G)B/s\) -> ", err, re.M)
    assert found, err
    assert int(found.group(1).replace(",", "")) == rows.stat().st_size and float(found.group(2)) > 0
    assert "0.0 MB" not in err
