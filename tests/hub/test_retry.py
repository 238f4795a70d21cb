"""``hub/retry.py``'s ``scrub``: a server's message as one printable line, real tokens masked, ordinary text kept.

A Hugging Face user access token is ``hf_`` and 34 letters (the shape secret scanners such as gitleaks and
TruffleHog look for); the mask takes ``hf_`` and 34 or more letters and digits, so a longer or digit-bearing
token is masked too, and ``hf_tokbin``'s own names (``/tmp/hf_tokbin-3k2j``, ``hf_tokbin.hub``) stay readable.
"""

from __future__ import annotations

import pytest

from hf_tokbin.hub.retry import scrub

REAL = "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"  # the shape of a real token: hf_ + 34 letters (not a live one)


@pytest.mark.parametrize(
    "text, shown",
    [
        (f"token {REAL} refused", "token hf_*** refused"),
        (f"Authorization: Bearer {REAL}", "Authorization: Bearer ***"),
        ("authorization: BEARER abc.def", "authorization: BEARER ***"),  # any bearer credential, any case
        (f"Bearer abc.def and ?token={REAL}&x=1", "Bearer *** and ?token=hf_***&x=1"),
        (f"/home/u/.cache/{REAL}/x", "/home/u/.cache/hf_***/x"),
        ("hf_" + "a1" * 20, "hf_***"),  # 40 letters and digits: longer than 34 is masked whole
        (f"{REAL}_suffix", "hf_***_suffix"),
    ],
)
def test_real_token_shapes_are_masked(text, shown):
    assert scrub(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "cannot write /tmp/hf_tokbin-3k2jx9/.work/part-000000.bin: No space left on device",
        "/tmp/hf_tokbin_test_upload_0123456789abcdef/shards/train/part-000000.idx: truncated",
        "module hf_tokbin.hub.retry, package hf_xet, env HF_HUB_DISABLE_XET, file hf_hub_download",
        "hf_" + "a" * 33,  # one letter short of a token
    ],
)
def test_ordinary_names_beginning_with_hf_are_not_masked(text):
    assert scrub(text) == text
