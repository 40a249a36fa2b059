"""The partition type: pandas (dask.dataframe) or cuDF (dask_cudf).

Both backends share the reader (pyarrow, on the CPU: it counts malformed lines, which
cuDF's GPU reader would silently turn into nulls) and differ only in where the typed
table goes: a pandas frame in host memory, or a cuDF frame in GPU memory, after which
cleansing, features, the split and XGBoost all run on the GPU. cuDF is imported only here,
only on that path.
"""
from __future__ import annotations

import importlib.util
import logging
from typing import Any

import pyarrow as pa

from workloads.core.errors import PreflightError

logger = logging.getLogger(__name__)

PANDAS = "pandas"
CUDF = "cudf"
CHOICES = (PANDAS, CUDF, "auto")


def has_dask_cudf() -> bool:
    """Whether this process could use dask_cudf (looked up, not imported)."""
    return all(importlib.util.find_spec(name) is not None for name in ("cudf", "dask_cudf"))


def resolve(choice: str, device: str, client: Any) -> str:
    """The backend to use for ``--dataframe choice``.

    ``auto`` is cudf when the run's device is ``cuda`` and this process and every worker
    have dask_cudf (the client builds the frames' metadata, so it needs cuDF too: the
    paper's first run had GPUs on the workers but not in Jupyter, so it used pandas).
    """
    if choice == PANDAS:
        return PANDAS
    if choice not in CHOICES:
        raise ValueError(f"--dataframe must be one of {CHOICES}, got {choice!r}")
    where = {"this process": has_dask_cudf()}
    if device == "cuda":
        where.update(client.run(has_dask_cudf))
    ready = device == "cuda" and all(where.values())
    if choice == CUDF and not ready:
        lacking = sorted(name for name, ok in where.items() if not ok)
        raise PreflightError(
            "--dataframe cudf needs --device cuda and dask_cudf on the client and every "
            f"worker; device={device}, lacking dask_cudf: {', '.join(lacking) or 'none'}")
    if choice == "auto":
        logger.info("--dataframe auto: %s", CUDF if ready else PANDAS)
    return CUDF if ready else PANDAS


def from_arrow(table: pa.Table, backend: str) -> Any:
    """A partition of the chosen backend holding ``table``, which is spent on the pandas
    path: each column's Arrow memory is freed as soon as it is converted, and columns
    are not consolidated into 2-D blocks (a second copy), so the conversion never holds
    the table twice."""
    if backend == CUDF:
        import cudf

        return cudf.DataFrame.from_arrow(table)
    return table.to_pandas(use_threads=False, split_blocks=True, self_destruct=True)


def prepare_client(backend: str) -> None:
    """Register the backend's dask dispatch in this process (dask_cudf on the cudf path)."""
    if backend == CUDF:
        import dask_cudf  # noqa: F401  (registers cuDF with dask.dataframe)
