"""Publish and fetch releases on the Hugging Face Hub in verified commits (see ``docs/hub.md``).

The file checks both use (``check_files``, ``check_receipts``) live in :mod:`hf_tokbin.verify.checks`;
the Hub's repository limits as a pure function of paths are :func:`check_hub_limits`.
"""

# Loaded on first use: a build checks its paths against the Hub's limits (files.py) before any Hub client is
# needed, and pull/push import huggingface_hub and tqdm (a fifth of a local build's start-up).
_LAZY = {
    "PublishPlan": "files",
    "Upload": "files",
    "check_hub_limits": "files",
    "publish_plan": "files",
    "PullSummary": "pull",
    "pull_release": "pull",
    "HubLimits": "push",
    "PushPreview": "push",
    "PushSummary": "push",
    "push_folder": "push",
    "CommitRateLimiter": "retry",
    "RetryPolicy": "retry",
}

__all__ = [
    "CommitRateLimiter",
    "HubLimits",
    "PublishPlan",
    "PushPreview",
    "PullSummary",
    "PushSummary",
    "RetryPolicy",
    "Upload",
    "check_hub_limits",
    "publish_plan",
    "pull_release",
    "push_folder",
]


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
