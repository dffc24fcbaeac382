"""``python -m kernel_evidence`` runs the ``kevidence`` command."""

import sys

from .cli import main

sys.exit(main())
