"""No credential in a URL a user gave is ever printed: userinfo and secret query parameters are masked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.errors import BuildError, mask_secrets

CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")
SECRETS = ("PASSWORD", "SIGVALUE", "TOKVALUE", "KEYVALUE")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("ftp://user:PASSWORD@host/x", "ftp://***@host/x"),
        ("s3://bucket/x?X-Amz-Signature=SIGVALUE&part=1", "s3://bucket/x?X-Amz-Signature=***&part=1"),
        ("https://h/x?sig=SIGVALUE&token=TOKVALUE", "https://h/x?sig=***&token=***"),
        ("gs://b/x?api_key=KEYVALUE", "gs://b/x?api_key=***"),
        ("https://h/x?keep=1", "https://h/x?keep=1"),
    ],
)
def test_mask_secrets(url, shown):
    assert mask_secrets(f"error at {url}: bad") == f"error at {shown}: bad"


def test_an_error_never_carries_a_password(tmp_path):
    error = BuildError("ftp://user:PASSWORD@host/x", "cannot write", got="ftp://user:PASSWORD@host/x?token=TOKVALUE")
    assert not any(s in str(error) for s in SECRETS)


def test_the_command_line_never_prints_a_password_of_out(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    out = "ftp://user:PASSWORD@127.0.0.1:9/x?X-Amz-Signature=SIGVALUE&token=TOKVALUE"
    for extra in ([], ["--dry-run"]):
        result = subprocess.run(
            [
                str(CONSOLE_SCRIPT),
                "build",
                "--corpus",
                str(tmp_path / "corpus"),
                "--tokenizer",
                "byte",
                "--doc-sep-id",
                "0",
                "--out",
                out,
                "--quiet",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == (0 if extra else 1), result.stdout + result.stderr
        assert "ftp://***@127.0.0.1" in (result.stdout if extra else result.stderr)
        assert not any(s in result.stdout + result.stderr for s in SECRETS), result.stdout + result.stderr


# Passwords as a URL's userinfo holds them: the parser's reading ends userinfo at the last "@" before the host.
PASSWORDS = [
    "p@ssSECRET",
    "p@ss:SECRET@",
    "pa:ssSECRET",
    "pa%2FssSECRET",
    "p%40ssSECRET",
    "pa ssSECRET",
    "pässSECRET",
    "密码SECRET",
]


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize("tail", ["/x", "", ":21/x?a=1", "#frag"])
def test_a_password_is_masked_whatever_it_holds(password, tail):
    url = f"ftp://user:{password}@host{tail}"
    masked = mask_secrets(f"{url}: cannot write: got {url}")
    assert "SECRET" not in masked and "user" not in masked, masked
    assert masked == f"ftp://***@host{tail}: cannot write: got ftp://***@host{tail}"


def test_an_at_sign_after_the_host_is_no_userinfo():
    # hf:// paths name a revision after "@", in the path: the authority ends at the first "/".
    for text in ("hf://datasets/org/repo@main/data.parquet", "s3://bucket/a@b/c", "https://host/x?user=a@b"):
        assert mask_secrets(text) == text
