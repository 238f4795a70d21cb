"""Publish and fetch releases on the Hugging Face Hub in verified commits (see ``docs/hub.md``).

The file checks both use (``check_files``, ``check_receipts``) live in :mod:`hf_tokbin.verify.checks`.
"""

from .files import PublishPlan, Upload, publish_plan
from .pull import PullSummary, pull_release
from .push import HubLimits, PushSummary, push_folder
from .retry import CommitRateLimiter, RetryPolicy

__all__ = [
    "CommitRateLimiter",
    "HubLimits",
    "PublishPlan",
    "PullSummary",
    "PushSummary",
    "RetryPolicy",
    "Upload",
    "publish_plan",
    "pull_release",
    "push_folder",
]
