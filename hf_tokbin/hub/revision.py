"""The one way the Hub is read at a revision: resolve it to a checked commit id first.

A commit id comes from the server, so it is checked before it names anything
on disk (a staging folder, a cache snapshot) or appears in a message: it is
exactly 40 lowercase hex digits, or the read stops. Every later request is
pinned to that id, so a push landing meanwhile cannot mix two versions.

Strings from a server are shown with :func:`shown`: control characters
(terminal escapes, newlines, bidi overrides) are escaped, and long strings
cut, so a server cannot write to the user's terminal.
"""

from __future__ import annotations

from ..errors import HubError, shown  # noqa: F401 - shown is this module's name for it too
from ..formats.rules import COMMIT_ID, is_commit_id  # noqa: F401 - the one commit-id rule, by its Hub-side name
from .retry import read_timeout_from_env


def escaped(error):
    """The same located error with the server strings it may carry (expected, got) passed through :func:`shown`."""
    def show(value):
        return shown(value) if isinstance(value, str) else value

    return type(error)(error.path, error.rule, show(error.expected), show(error.got), error.hint)


MAX_LISTED_ENTRIES = 300_000  # files and folders one tree listing may hold (the Hub advises at most 100,000 files a repo)


def bounded_listing(entries, where: str) -> list:
    """A tree listing's entries (``list_repo_tree``), read as they come and stopped past :data:`MAX_LISTED_ENTRIES`.

    The client follows the server's ``Link: rel="next"`` pages for as long as
    they come: a server that pages forever grew the listing (and the memory)
    without end. Past the bound the read stops with one error.
    """
    listed = []
    for entry in entries:
        listed.append(entry)
        if len(listed) > MAX_LISTED_ENTRIES:
            raise HubError(where, f"a repo's file listing may hold at most {MAX_LISTED_ENTRIES:,} files and folders", got=f"more than {MAX_LISTED_ENTRIES:,}", hint="the Hub advises at most 100,000 files a repo")
    return listed


def resolve_commit(api, repo_id: str, revision: str | None, repo_type: str = "dataset") -> str:
    """The commit id ``revision`` (default: main) of ``repo_id`` names, checked.

    ``api`` is a :class:`huggingface_hub.HfApi`. Errors of the call itself propagate
    (the caller retries and words them); a malformed id, or another id than the
    one asked for, is a :class:`HubError`.
    """
    where = f"{repo_id}@{shown(revision or 'main')}"
    # A timeout: huggingface_hub's client waits forever by default, so a server that stops answering held the read.
    sha = api.repo_info(repo_id, revision=revision, repo_type=repo_type, timeout=read_timeout_from_env()).sha
    if not is_commit_id(sha):
        raise HubError(where, "the Hub answered a commit id that is not 40 lowercase hex digits; nothing was written", got=shown(sha))
    if is_commit_id(revision) and sha != revision:
        raise HubError(where, "the Hub answered another commit than the one asked for", expected=revision, got=sha)
    return sha
