"""Publish and fetch releases on the Hugging Face Hub in verified commits (see ``docs/hub.md``)."""

from .files import PublishPlan, Upload, check_files, check_receipts, publish_plan
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
    "check_files",
    "check_receipts",
    "publish_plan",
    "pull_release",
    "push_folder",
]
