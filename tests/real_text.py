"""Real English text for tests: Shakespeare scenes (tests/data/shakespeare_scenes.md says where from)."""

from __future__ import annotations

from pathlib import Path

SCENES = Path(__file__).parent / "data" / "shakespeare_scenes.txt"


def real_documents() -> list[str]:
    """Every speech or stage direction of the scenes (blank-line separated), in order: about 2,000 documents."""
    text = SCENES.read_text(encoding="utf-8")
    scenes = [s for s in text.split("\n<|endoftext|>\n")]
    return [p.strip("\n") for scene in scenes for p in scene.split("\n\n") if p.strip()]
