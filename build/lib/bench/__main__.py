"""``python -m bench``: see :mod:`bench.cli`."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    from bench.cli import main

    sys.exit(main())
