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
from .bounded import Deadline, raise_for_status, read_body
from .retry import listing_timeout_from_env, read_timeout_from_env


def escaped(error):
    """The same located error with the server strings it may carry (expected, got) passed through :func:`shown`."""
    def show(value):
        return shown(value) if isinstance(value, str) else value

    return type(error)(error.path, error.rule, show(error.expected), show(error.got), error.hint)


# files and folders one tree listing may hold (the Hub advises at most 100,000 files a repo)
MAX_LISTED_ENTRIES = 300_000
MAX_PAGE_BYTES = 64 * 1024 * 1024  # one page of a tree listing (the Hub's hold 1,000 entries: a few hundred KB)


def bounded_listing(
    api, repo_id: str, where: str, *, repo_type: str, revision: str, recursive: bool, path_in_repo: str | None = None
) -> list:
    """The repo's tree at ``revision`` (under ``path_in_repo``) as ``HfApi.list_repo_tree`` gives it, bounded.

    ``api`` is a :class:`huggingface_hub.HfApi` (its endpoint and token). The
    pages are requested here, not by ``list_repo_tree``: it follows a server's
    ``Link: rel="next"`` pages for as long as they come, to any host (with the
    token), reads each page whole with no timeout, and sleeps whatever
    ``Retry-After`` a server asks. Here the listing stops with one error past
    :data:`MAX_LISTED_ENTRIES` entries, a page past :data:`MAX_PAGE_BYTES`, a
    read past the read timeout, the whole listing past
    ``HF_TOKBIN_LISTING_TIMEOUT`` seconds (default 600: a server sending a page
    a minute, or its bytes one by one, held the command for good), or a next
    page on another origin than the endpoint's (the Hub links its own pages;
    the request would carry the token elsewhere). Each listed path must be a
    plain path inside the folder listed (no empty, ``.`` or ``..`` part; under
    ``path_in_repo``), or the listing is one error: callers fetch what it lists
    into folders of their own (``a/../../x`` climbed out of them). An HTTP
    error is the client's own (``hf_raise_for_status``: ``EntryNotFoundError``
    for a missing folder); callers retry.
    """
    from urllib.parse import quote

    from huggingface_hub.hf_api import RepoFile, RepoFolder

    seconds = listing_timeout_from_env()
    url = f"{api.endpoint}/api/{repo_type}s/{repo_id}/tree/{quote(revision, safe='')}" + (
        f"/{quote(path_in_repo, safe='')}" if path_in_repo else ""
    )
    params = {"recursive": recursive, "expand": False}
    listed: list = []

    def too_slow() -> HubError:
        return HubError(
            where,
            f"the repo's file listing took more than {seconds:g}s ({len(listed):,} files and folders by then)",
            hint="re-run; for a repo that large, HF_TOKBIN_LISTING_TIMEOUT=SECONDS raises the bound",
        )

    with Deadline(seconds, too_slow) as deadline:
        while url is not None:
            page, url = get_json(
                api, deadline, url, params, MAX_PAGE_BYTES, where, "a page of the repo's file listing"
            )
            params = None  # the next page's link holds the query
            for entry in json_objects(page, where, "a page of the repo's file listing", "entries"):
                _check_listed_path(entry.get("path"), path_in_repo, where)
                listed.append(RepoFile(**entry) if entry.get("type") == "file" else RepoFolder(**entry))
                if len(listed) > MAX_LISTED_ENTRIES:
                    raise HubError(
                        where,
                        f"a repo's file listing may hold at most {MAX_LISTED_ENTRIES:,} files and folders",
                        got=f"more than {MAX_LISTED_ENTRIES:,}",
                        hint="the Hub advises at most 100,000 files a repo",
                    )
    return listed


def _check_listed_path(path, folder: str | None, where: str) -> None:
    """A listed path: parts that are names (not empty, ``.`` or ``..``), under ``folder`` when one was listed."""
    inside = isinstance(path, str) and not any(part in ("", ".", "..") for part in path.split("/"))
    if not (inside and (not folder or path.startswith(folder.strip("/") + "/"))):
        raise HubError(
            where,
            f"the repo's file listing lists a path outside the folder listed ({shown(folder or 'the repo')})",
            got=shown(path),
        )


def json_objects(page, where: str, what: str, items: str) -> list[dict]:
    """``page`` (a listing's page, from :func:`get_json`) if it is a JSON list of objects, else one error."""
    if not (isinstance(page, list) and all(isinstance(item, dict) for item in page)):
        raise HubError(where, f"{what} must be a JSON list of {items}", got=shown(str(page)[:100]))
    return page


def get_json(api, deadline: Deadline, url: str, params: dict | None, max_bytes: int, where: str, what: str):
    """``(the JSON answer, the next page's URL or None)`` of one GET to the Hub API under ``deadline``.

    With the token, each read within the read timeout, at most ``max_bytes``;
    the next page (``Link: rel="next"``) must be on the endpoint's own origin
    (scheme, host, port).
    """
    import contextlib
    import json
    from urllib.parse import urljoin

    import httpx2
    from huggingface_hub.utils import build_hf_headers

    headers = {**build_hf_headers(token=api.token), "Accept-Encoding": "identity"}  # counted as sent: no expansion
    with deadline.stream(
        "GET", url, params=params, headers=headers, timeout=httpx2.Timeout(read_timeout_from_env())
    ) as response:
        raise_for_status(response)
        body = read_body(response, max_bytes, where, what)
        link = response.links.get("next", {}).get("url")
    try:
        answer = json.loads(body)
    except ValueError:
        raise HubError(where, f"{what} must be JSON", got=shown(body[:100].decode("utf-8", "replace"))) from None
    if link is None:
        return answer, None
    with contextlib.suppress(ValueError):  # not a URL urllib can read: compared as it is, refused below
        link = urljoin(url, link)
    if _origin(link) != _origin(api.endpoint):
        raise HubError(
            where,
            f"{what} links its next page on another host than the endpoint "
            f"{shown(api.endpoint)}; the token is sent to the endpoint only",
            got=shown(link[:200]),
        )
    return answer, link


def _origin(url: str) -> tuple:
    """``(scheme, host, port)`` of ``url``, the port spelled out (``https://h`` is ``https://h:443``)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    # no URL (a netloc that changes under NFKC, an unclosed IPv6 bracket), or a port that is no number
    except ValueError:
        return (None,)
    return parts.scheme.lower(), parts.hostname, port or {"http": 80, "https": 443}.get(parts.scheme.lower())


def resolve_commit(api, repo_id: str, revision: str | None, repo_type: str = "dataset") -> str:
    """The commit id ``revision`` (default: main) of ``repo_id`` names, checked.

    ``api`` is a :class:`huggingface_hub.HfApi`. Errors of the call itself propagate
    (the caller retries and words them); a malformed id, or another id than the
    one asked for, is a :class:`HubError`.
    """
    where = f"{repo_id}@{shown(revision or 'main')}"
    sha = _repo_sha(api, repo_id, revision, repo_type, where)
    if not is_commit_id(sha):
        raise HubError(
            where,
            "the Hub answered a commit id that is not 40 lowercase hex digits; nothing was written",
            got=shown(sha),
        )
    if is_commit_id(revision) and sha != revision:
        raise HubError(where, "the Hub answered another commit than the one asked for", expected=revision, got=sha)
    return sha


MAX_REPO_INFO_BYTES = 64 * 1024 * 1024  # a repo's info lists its files (siblings): about 100 bytes a file


def _repo_sha(api, repo_id: str, revision: str | None, repo_type: str, where: str):
    """The ``sha`` of the repo's info at ``revision``: ``HfApi.repo_info``'s request, bounded as a listing is.

    ``repo_info`` waits for each read with no timeout by default, and with one for
    each read only: a server sending its answer a byte at a time held it. Here each
    read has ``read_timeout``, the whole answer ``HF_TOKBIN_LISTING_TIMEOUT`` seconds
    (it lists the repo's files) and at most :data:`MAX_REPO_INFO_BYTES`. An HTTP error
    is the client's own (``hf_raise_for_status``: ``RepositoryNotFoundError``, ...).
    """
    from urllib.parse import quote

    seconds = listing_timeout_from_env()
    url = f"{api.endpoint}/api/{repo_type}s/{repo_id}" + (
        "" if revision is None else f"/revision/{quote(revision, safe='')}"
    )

    def too_slow() -> HubError:
        return HubError(
            where,
            f"resolving the revision took more than {seconds:g}s",
            hint="re-run; HF_TOKBIN_LISTING_TIMEOUT=SECONDS raises the bound",
        )

    with Deadline(seconds, too_slow) as deadline:
        info, _ = get_json(api, deadline, url, None, MAX_REPO_INFO_BYTES, where, "the repo's info")
    return info.get("sha") if isinstance(info, dict) else None
