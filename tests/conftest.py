"""Shared test set-up: ``scripts/`` on the import path, for seed 002's reference encoder (``scripts/seed002.py``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
