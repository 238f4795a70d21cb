"""``hf-tokbin``: the command line, a thin layer over the Python API.

Each subcommand lives in its own module here with ``add_arguments(parser)``
and ``run(args) -> int``. Errors of hf_tokbin (and OS errors such as a
missing file) are printed as one line on stderr with exit status 1, never a
traceback; so is a full disk, even where a library wrapped the OSError
(``datasets``' DatasetGenerationError), naming the file being written (or
the ``--out`` folder when no file is known).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand -> (module, help)
COMMANDS = {
    "corpus": ("corpus", "raw text in, Parquet corpus shards out"),
    "tokenizer": ("tokenizer", "train a byte-level BPE tokenizer on a corpus"),
    "build": ("build", "encode a corpus and write a tokenized release"),
    "verify": ("verify", "check every byte of a release or token file"),
    "push": ("push", "publish a verified release to a Hub dataset repo"),
    "pull": ("pull", "download a release from the Hub and verify it"),
    "info": ("info", "what a token file or release holds, at a glance"),
    "show": ("show", "decode a document or a training window of a release, boundary tokens marked"),
    "recipe": ("recipe", "the exact flags or config lines to train on a release with each trainer"),
    "merge": ("merge", "one Megatron pair per split, as Megatron's merge_datasets.py writes it"),
}


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (all of them when None).

    ``hf-tokbin --help`` lists the commands from :data:`COMMANDS` alone, and
    ``hf-tokbin build ...`` imports the build's options, not the Hub client's:
    each subcommand module imports its libraries when it runs.
    """
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="hf-tokbin", description="Tokenized pretraining releases for llm.c, Megatron-LM and MaxText."
    )
    parser.add_argument("--version", action="version", version=f"hf-tokbin {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        subparser = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            importlib.import_module(f"{__name__}.{module}").add_arguments(subparser)
    return parser


class _MaskedStream:
    """A text stream that writes through :func:`hf_tokbin.errors.mask_secrets`.

    No credential of a URL reaches the terminal.
    """

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        from ..errors import mask_secrets

        if self._stream is not None:  # None: the process has no such stream (``>&-``), and print() writes nothing then
            self._stream.write(mask_secrets(text))
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:
            self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _command_in(argv: list[str]) -> str:
    """The subcommand ``argv`` names (its first word that is not an option).

    "" for none (``--help``, ``--version``).
    """
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    import contextlib

    from .progress import LogLines, log_progress_seldom

    # Every line a command prints (results, progress, errors) is masked, whichever code printed it;
    # in a log (stderr not a terminal), a progress bar's redraws are lines, not carriage returns and cursor moves.
    errors = sys.stderr if sys.stderr is None or _is_terminal(sys.stderr) else LogLines(sys.stderr)
    if errors is not sys.stderr:
        log_progress_seldom()
    try:
        with contextlib.redirect_stdout(_MaskedStream(sys.stdout)), contextlib.redirect_stderr(_MaskedStream(errors)):
            return _main(argv)
    finally:
        if errors is not sys.stderr:
            errors.close()


def exit_main() -> None:
    """``hf-tokbin`` (the console script and ``python -m hf_tokbin``): run the command, then end the process at once.

    A build's interpreter holds about 850 modules (numpy, pyarrow, awkward, both
    engines); tearing them down object by object took 0.3-0.5 s after the last
    file was written. Every file a command writes is closed (and fsynced) before
    it returns, so once the exit handlers have run (temporary folders, worker
    pools) and stdout and stderr are flushed, nothing is left for the teardown to
    do. While another thread that is not a daemon still runs, the interpreter
    exits the usual way (which waits for it). An exception (``SystemExit`` from ``--help`` too) leaves
    the usual way as well.
    """
    import atexit
    import os
    import threading

    reuse_freed_memory()
    code = main()
    # Daemon threads (tqdm's monitor after any progress bar, a prefetch thread) hold no exit up, here as in the
    # interpreter's own exit; only a thread it would wait for sends the process the usual way.
    if any(t is not threading.current_thread() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()  # what the interpreter runs first at exit; documented in the atexit module's own docs
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with that descriptor closed (``>&-``): nothing was buffered for it
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # as the interpreter reports a failed flush of stdout at exit
    os._exit(code)


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_FROM_THE_HEAP_BYTES = 256 << 20  # allocations up to this size come from the heap (a batch's buffers are 4-64 MiB)
# Freed memory at the heap's top up to this size stays: enough for a batch's buffers, and a 2.2 GB build peaked 40-110
# MiB lower than with 256 MiB, at the same speed.
_KEPT_FREE_BYTES = 32 << 20


def reuse_freed_memory() -> None:
    """Keep freed memory in this process for its next batch, instead of handing it back to the kernel.

    A build allocates the same large buffers batch after batch (decompressed
    text, the engine's ids, the narrowed ids). By default glibc returns each
    freed buffer to the kernel (``munmap``, heap trimming) and pyarrow's
    mimalloc purges its pages, so the next batch faults in and zeroes fresh
    pages again: a quarter to a third of a 200 MB build's CPU time on a
    2-core VM (``perf``: ``clear_page_erms`` under the engine's and the
    reader's threads). Here buffers up to 256 MiB come from the heap, and up
    to 32 MiB of freed memory stays there for the next batch (a process's own
    peak does not grow: the same buffers are reused; but each process holds
    its peak until it ends, so the peaks of a
    ``--num-proc`` build's processes add up: with 16 MiB batches of text, the
    tree's peak PSS was 1.2-1.35x, none of it growing per shard), Arrow
    allocates through glibc, and numpy's OpenBLAS (never used by hf_tokbin)
    starts no spinning threads. The process is the command's own
    (:func:`exit_main`); a variable the user set wins, and a library user's
    process is left as it is.
    """
    import os

    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # read when pyarrow first allocates
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when numpy is first imported
    if (
        "GLIBC_TUNABLES" in os.environ
        or "MALLOC_TRIM_THRESHOLD_" in os.environ
        or "MALLOC_MMAP_THRESHOLD_" in os.environ
    ):
        return  # the user tuned glibc's malloc
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return
    except (ValueError, OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return
    # Only speed is at stake: a Python without ctypes (built without libffi), an interpreter dlopen cannot open, a libc
    # without mallopt run the command untuned.
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, _FROM_THE_HEAP_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, _KEPT_FREE_BYTES)
    except (ImportError, OSError, AttributeError):
        return


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _main(argv: list[str] | None) -> int:
    from .._io import disk_full_error, write_errors_of_libraries
    from ..errors import TokbinError
    from .output import emit_error

    argv = sys.argv[1:] if argv is None else argv
    args = _parse(make_parser(_command_in(argv)), argv)
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and nobody to say it to.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe stopped
    except TokbinError as e:
        # Bad input is one line; any exception not caught here is a bug and shows its traceback.
        print(f"hf-tokbin {args.command}: error: {e}", file=sys.stderr)
        emit_error(args, e, str(e))
        return 1
    except (
        write_errors_of_libraries()
    ) as e:  # OSError, and the library errors that wrap one (evaluated only on an error)
        # OS errors (a missing file, a full disk) are one line; a library's error is, only if a full disk caused it.
        full = disk_full_error(e, getattr(args, "out", None))
        if full is None and not isinstance(e, OSError):
            raise
        print(f"hf-tokbin {args.command}: error: {full or e}", file=sys.stderr)
        emit_error(args, full or e, str(full or e))
        return 1
    except KeyboardInterrupt:
        print(f"hf-tokbin {args.command}: interrupted", file=sys.stderr)
        return 130


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but a word no option takes is refused.

    The refusal shows the usage of the subcommand the word was given to.
    """
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _innermost_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _innermost_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)subcommand's parser ``args`` were parsed by.

    ``corpus import``'s for ``hf-tokbin corpus import ...``.
    """
    for action in parser._actions:  # argparse keeps its subcommands only there
        if isinstance(action, argparse._SubParsersAction) and getattr(args, action.dest, None) in action.choices:
            return _innermost_parser(action.choices[getattr(args, action.dest)], args)
    return parser


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit does not fail on the closed pipe again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    exit_main()
