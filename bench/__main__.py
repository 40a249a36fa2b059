"""``python -m bench``: the same command as ``dask-tkg bench`` (see :mod:`bench.cli`), for a
machine where the ``dask-tkg`` command is not installed (the GPU machine)."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    from bench.cli import main

    sys.exit(main())
