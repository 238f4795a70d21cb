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


def escaped(error):
    """The same located error with the server strings it may carry (expected, got) passed through :func:`shown`."""
    def show(value):
        return shown(value) if isinstance(value, str) else value

    return type(error)(error.path, error.rule, show(error.expected), show(error.got), error.hint)


def resolve_commit(api, repo_id: str, revision: str | None, repo_type: str = "dataset") -> str:
    """The commit id ``revision`` (default: main) of ``repo_id`` names, checked.

    ``api`` is a :class:`huggingface_hub.HfApi`. Errors of the call itself propagate
    (the caller retries and words them); a malformed id, or another id than the
    one asked for, is a :class:`HubError`.
    """
    where = f"{repo_id}@{shown(revision or 'main')}"
    sha = api.repo_info(repo_id, revision=revision, repo_type=repo_type).sha
    if not is_commit_id(sha):
        raise HubError(where, "the Hub answered a commit id that is not 40 lowercase hex digits; nothing was written", got=shown(sha))
    if is_commit_id(revision) and sha != revision:
        raise HubError(where, "the Hub answered another commit than the one asked for", expected=revision, got=sha)
    return sha
