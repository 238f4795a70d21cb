"""Dataset cards: a release's (:mod:`.release`) and a corpus's (:mod:`.corpus`), from ``dataset_card/``'s templates."""

from .corpus import render_corpus_card
from .release import render_release_card

__all__ = ["render_corpus_card", "render_release_card"]
