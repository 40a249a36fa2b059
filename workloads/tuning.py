"""The Dask workers' tuning environment: one source for the runner's local cluster
(``workloads.cluster.local``) and the deployed workers (``components/dask``).

For torch inference and XGBoost (the suite's results, docs/results/*.json:
``images_dask_vs_naive_loop`` against untuned workers, ``taxi_peak_memory_vs_frame``):

* ``MALLOC_TRIM_THRESHOLD_``: Dask's nanny sets it to 65536 for every worker (distributed.yaml,
  ``nanny.pre-spawn-environ``); with it a torch forward pass page-faults more and runs slower.
  It is unset (None).
* threads: Dask starts worker processes with one BLAS/OpenMP thread, so torch and XGBoost
  would run on one core of a six-core worker: ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` /
  ``OPENBLAS_NUM_THREADS`` are set to the worker's thread count.
* tcmalloc: where Debian's ``libtcmalloc-minimal4`` is installed it is preloaded (torch's
  forward passes allocate faster from it than from glibc's), and pyarrow allocates from it too
  (``ARROW_DEFAULT_MEMORY_POOL=system``, read by pyarrow when it loads): the memory the taxi
  reader's Arrow tables free is then reused for the pandas frames and XGBoost's buffers,
  instead of staying in mimalloc's heap of its own, which lowers the taxi run's peak memory.

Standard library only, and no Dask: the Pulumi program imports it too.
"""
from __future__ import annotations

import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
TCMALLOC_PATHS = (
    "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",  # Debian/Ubuntu amd64 (the images' path)
    "/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
    "/usr/lib64/libtcmalloc_minimal.so.4",
)
IMAGE_TCMALLOC = TCMALLOC_PATHS[0]


def find_tcmalloc() -> str | None:
    """This machine's tcmalloc, or None."""
    return next((path for path in TCMALLOC_PATHS if os.path.exists(path)), None)


def worker_environ(threads: int, tcmalloc: str | None = None, preload: str = "") -> dict[str, str | None]:
    """The variables a worker process gets (None: unset). ``tcmalloc`` is the library to
    preload, if any; ``preload`` is an ``LD_PRELOAD`` already in force, kept after it."""
    if threads < 1:
        raise ValueError(f"worker threads must be >= 1, got {threads}")
    environ: dict[str, str | None] = {"MALLOC_TRIM_THRESHOLD_": None}
    environ.update({name: str(threads) for name in THREAD_VARIABLES})
    if tcmalloc:
        environ["LD_PRELOAD"] = preload if tcmalloc in preload.split() else " ".join(filter(None, [tcmalloc, preload]))
        environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    return environ


# Failure detection. Dask's defaults notice a silent worker (a stopped process, a partition
# that drops packets) only after the scheduler's worker-ttl of 5 minutes. Workers heartbeat
# every 0.5-1 s on clusters this size (distributed: heartbeat_interval), and the scheduler never
# uses less than 10 heartbeats; 60 s tolerates a worker whose event loop is held up for tens of
# seconds by a long GIL-holding call or a swap storm, and is 5x sooner than Dask's default. An
# unresponsive connection is called dead after Dask's TCP timeout (TCP_USER_TIMEOUT + keepalive),
# kept at its default of 30 s and stated here so it is recorded.
WORKER_TTL_S = 60
TCP_TIMEOUT_S = 30


def failure_detection_config(worker_ttl_s: float = WORKER_TTL_S,
                             tcp_timeout_s: float = TCP_TIMEOUT_S) -> dict[str, str]:
    """Dask config keys (``distributed.*``) the scheduler, workers and client start with."""
    return {"distributed.scheduler.worker-ttl": f"{worker_ttl_s:g}s",
            "distributed.comm.timeouts.tcp": f"{tcp_timeout_s:g}s"}


def dask_env_name(key: str) -> str:
    """The environment variable Dask reads a config key from (``a.b-c`` -> ``DASK_A__B_C``)."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def failure_detection_env(worker_ttl_s: float = WORKER_TTL_S, tcp_timeout_s: float = TCP_TIMEOUT_S) -> dict[str, str]:
    """The same as pod environment variables (Dask reads ``DASK_*`` as config)."""
    return {dask_env_name(key): value for key, value in failure_detection_config(worker_ttl_s, tcp_timeout_s).items()}
