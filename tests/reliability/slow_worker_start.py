"""A worker preload (``distributed.worker.preload``) that makes each worker's start slow: it
touches ``worker-starting`` in the fault directory (``DASK_TKG_FAULTS``), then sleeps, so that
a test can signal the runner while its local cluster is still starting."""
from __future__ import annotations

import os
import time
from pathlib import Path

STARTING = "worker-starting"
START_DELAY_S = 3.0


def dask_setup(worker) -> None:
    (Path(os.environ["DASK_TKG_FAULTS"]) / STARTING).touch()
    time.sleep(START_DELAY_S)
