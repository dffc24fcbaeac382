"""``python -m kernel_evidence`` runs the ``kevidence`` command."""

import sys

from .cli import main

if __name__ == "__main__":  # worker processes (spawn) import this module too
    sys.exit(main())
