"""The Dask backends by their ``daskBackend`` name (settings/operator.py's ``BACKENDS``): the
program builds the one the stack names, through the protocol both follow (``backend.py``)."""
from __future__ import annotations

from components.dask.backend import DaskBackend
from components.dask.dask_release import DaskRelease
from components.dask.operator_cluster import DaskOperatorCluster

BACKENDS: dict[str, type[DaskBackend]] = {"helm": DaskRelease, "operator": DaskOperatorCluster}
