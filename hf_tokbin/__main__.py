"""``python -m hf_tokbin`` is ``hf-tokbin``."""

from .cli import exit_main

exit_main()
