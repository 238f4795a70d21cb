"""Rust panics inside the engines (``tokenizers``, gigatoken) as one line naming the document.

Both engines are Rust behind pyo3, which turns a panic into
``pyo3_runtime.PanicException``, a ``BaseException`` (``except Exception``
misses it), after Rust's panic hook has written its report to file
descriptor 2 (three lines, or a whole backtrace under ``RUST_BACKTRACE=1``).
A panic is a property of the text, not a transient failure: Oniguruma, the
regex engine of ``tokenizers``' ``Split`` pre-tokenizer, gives up past its
retry limit on a pattern that backtracks too much on some text
(``retry-limit-in-match``), and ``tokenizers`` panics.

:func:`engine_output_held` sends file descriptor 2 to a temporary file while
an engine runs: after a panic the hook's report is dropped (the error line
carries the panic's message), otherwise whatever was written is passed on
unchanged. :func:`is_engine_panic` tells such an exception apart.
:func:`engine_panic_as` is the guard of every place that encodes and only
has to stop (verify's preview check, a tokenizer's loading): the panic
becomes one located error. The build's encoder uses the two parts on their
own, to find the document a batch panicked on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile


def is_engine_panic(error: BaseException) -> bool:
    """Whether ``error`` is a Rust panic surfaced by pyo3 (each extension module has its own PanicException class)."""
    return type(error).__name__ == "PanicException"


def panic_message(error: BaseException) -> str:
    """The panic's first line, cut to 200 characters."""
    return (str(error).splitlines() or [type(error).__name__])[0][:200]


@contextlib.contextmanager
def engine_output_held():
    """File descriptor 2 goes to a temporary file for the block; passed on after it, dropped if the block raised a
    panic."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no descriptor 2 (a daemon), or no sys.stderr: nothing to hold
        yield
        return
    panicked = False
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException as error:
            panicked = is_engine_panic(error)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if not panicked:
                held.seek(0)
                data = memoryview(held.read())
                while data:
                    data = data[os.write(2, data) :]


@contextlib.contextmanager
def engine_panic_as(error_type, where, rule: str):
    """Run the block with the engine's output held; a panic in it is raised as ``error_type(where, rule, got=...)``."""
    try:
        with engine_output_held():
            yield
    except BaseException as error:
        if not is_engine_panic(error):
            raise
        raise error_type(where, rule, got=panic_message(error)) from None
