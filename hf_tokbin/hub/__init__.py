"""Publish and fetch releases on the Hugging Face Hub in verified commits (see ``docs/hub.md``).

The file checks both use (``check_files``, ``check_receipts``) live in :mod:`hf_tokbin.verify.checks`;
the Hub's repository limits as a pure function of paths are :func:`check_hub_limits`.
"""

from .files import PublishPlan, Upload, check_hub_limits, publish_plan
from .pull import PullSummary, pull_release
from .push import HubLimits, PushPreview, PushSummary, push_folder
from .retry import CommitRateLimiter, RetryPolicy

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
