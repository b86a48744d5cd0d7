"""``python -m nanopu [ID ...] --out DIR [--report] [--backend local|ray]``:
the papers' experiments as sweep tasks (``nanopu.sweep.main``); ``nanopu
experiment --backend ray`` and ``nanopu reproduce --backend ray`` run it."""

import sys

from .sweep import main

sys.exit(main())
