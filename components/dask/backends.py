"""The Dask backends by their ``daskBackend`` name (settings/operator.py's ``BACKENDS``): the
program builds the one the stack names, through the protocol both follow (``backend.py``)."""
from __future__ import annotations

from components.dask.backend import DaskBackend
from components.dask.dask_release import DaskRelease
from components.dask.operator_cluster import DaskOperatorCluster
from components.settings.model import Backend

BACKENDS: dict[Backend, type[DaskBackend]] = {Backend.HELM: DaskRelease, Backend.OPERATOR: DaskOperatorCluster}
