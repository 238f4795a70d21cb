"""Arrow columns from numpy buffers are the arrays pyarrow's own conversion gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hf_tokbin.formats.arrow_columns import array_of, repeated_string, string_array


@given(st.lists(st.text()))
def test_string_array_is_pyarrows(texts):
    got = string_array(texts)
    got.validate(full=True)
    assert got.equals(pa.array(texts, type=pa.string()))


@pytest.mark.parametrize("value", ["train", "validation", "", "caf\u00e9"])
@pytest.mark.parametrize("count", [0, 1, 7])
def test_repeated_string_is_pyarrows(value, count):
    got = repeated_string(value, count)
    got.validate(full=True)
    assert got.equals(pa.array([value] * count, type=pa.string()))


@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=5), max_size=6))
def test_uint32_lists_are_pyarrows(rows):
    kind = pa.list_(pa.uint32())
    got = array_of([np.asarray(r, dtype=np.uint32) for r in rows], kind)
    got.validate(full=True)
    assert got.equals(pa.array(rows, type=kind))


@given(st.lists(st.integers(-(2**63), 2**63 - 1)))
def test_int64_columns_are_pyarrows(values):
    assert array_of(values, pa.int64()).equals(pa.array(values, type=pa.int64()))
