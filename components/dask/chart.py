"""The pinned ``dask`` chart (https://helm.dask.org): where it is, its ports, and what it
cannot express.

A key the chart does not read is silently ignored by Helm (the RAPIDS docs' own sample
set ``worker.dask_worker`` at the wrong level), so the render tests check every key the
values builder emits against the pinned chart's own ``values.yaml``.
"""
from __future__ import annotations

REPOSITORY = "https://helm.dask.org"
CHART = "dask"
SCHEDULER_PORT = 8786
DASHBOARD_PORT = 8787  # the chart's webUI service port; the paper's users opened :8787
JUPYTER_PORT = 80
JUPYTER_CONTAINER_PORT = 8888  # dask-jupyter-deployment.yaml containerPort; the Service's target

# dask-scheduler-deployment.yaml and dask-jupyter-deployment.yaml hard-code
# ``strategy: {type: RollingUpdate}`` (Kubernetes' defaults: maxSurge 25 % rounded up,
# maxUnavailable 25 % rounded down, so one extra pod for one replica); only the worker's
# strategy is a value (``worker.strategy``).
FIXED_ROLLING_UPDATE = ("scheduler", "jupyter")
# What the program sets for the workers instead: one at a time, no extra pod (each worker
# holds a whole GPU node, and a rollout would need a GPU nobody has).
WORKER_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}

# Values keys the chart's templates read but its values.yaml documents only in comments
# (the render tests check every emitted key against the chart's own values.yaml plus these):
DOCUMENTED_IN_COMMENTS = frozenset({
    "worker.threads_per_worker",  # values.yaml: "# threads_per_worker: 1"; dask-worker-deployment.yaml --nthreads
})
