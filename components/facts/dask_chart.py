"""The pinned ``dask`` chart (https://helm.dask.org): where it is, its ports, and what it
cannot express.

A key the chart does not read is silently ignored by Helm (the RAPIDS docs' own sample
set ``worker.dask_worker`` at the wrong level), so the render tests check every key the
values builder emits against the pinned chart's own ``values.yaml``.
"""
from __future__ import annotations

REPOSITORY = "https://helm.dask.org"
CHART = "dask"
OPERATOR_CHART = "dask-kubernetes-operator"  # the operator's controller and CRDs, same repository
SCHEDULER_PORT = 8786
DASHBOARD_PORT = 8787  # the chart's webUI service port; the paper's users opened :8787
JUPYTER_PORT = 80
JUPYTER_CONTAINER_PORT = 8888  # dask-jupyter-deployment.yaml containerPort; the Service's target
# Where the chart puts the Jupyter password: its ConfigMap's one key
# (dask-jupyter-config.yaml: ``c.NotebookApp.password = '{{ .Values.jupyter.password }}'``),
# mounted at /usr/local/etc/jupyter (dask-jupyter-deployment.yaml, config-volume). Only
# the classic Notebook server (notebook < 7) reads a file of that name by itself: Jupyter
# Server 1.x and 2.x look for jupyter_server_config (jupyter_core 5.9.1 application.py,
# ``_config_file_name_default``: the app's name + "_config"), so ``jupyter lab`` ignores it
# and starts with a random token instead of the password (dask/helm-chart#512, open, seen
# with this chart and JupyterLab 4.6.6 on the test cluster). The Jupyter command names it.
JUPYTER_CONFIG_FILE = "/usr/local/etc/jupyter/jupyter_notebook_config.py"

# dask-scheduler-deployment.yaml and dask-jupyter-deployment.yaml hard-code
# ``strategy: {type: RollingUpdate}`` (Kubernetes' defaults: maxSurge 25 % rounded up,
# maxUnavailable 25 % rounded down, so one extra pod for one replica); only the worker's
# strategy is a value (``worker.strategy``).
FIXED_ROLLING_UPDATE = ("scheduler", "jupyter")
# What the program sets for the workers instead: one at a time, no extra pod (each worker
# holds a whole GPU node, and a rollout would need a GPU nobody has).
WORKER_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}

# Values keys the chart's templates read but its values.yaml does not declare (the render
# tests check every emitted key against the chart's own values.yaml plus these): key -> the
# template expression that reads it.
KEYS_NOT_IN_VALUES_YAML = {
    # dask-scheduler-deployment.yaml: {{- with .Values.scheduler.env }} (undocumented)
    "scheduler.env": ".Values.scheduler.env",
    # values.yaml comment "# threads_per_worker: 1"; dask-worker-deployment.yaml --nthreads
    "worker.threads_per_worker": ".Values.worker.threads_per_worker",
    # dask-worker-deployment.yaml passes the whole strategy through toYaml
    "worker.strategy.rollingUpdate": ".Values.worker.strategy",
}
