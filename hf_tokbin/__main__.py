"""``python -m hf_tokbin`` is ``hf-tokbin``."""

import sys

from .cli import main

sys.exit(main())
