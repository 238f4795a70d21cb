"""``hf-tokbin verify`` and ``info``: a release (:mod:`.release`), a token file or folder (:mod:`.files`)."""

from .corpus import verify_corpus
from .files import verify_path
from .release import verify_release

__all__ = ["verify_corpus", "verify_path", "verify_release"]
