"""The generated tree's size, the synthetic colour model and a deployed stack's outputs the
workloads tests share."""
from __future__ import annotations

BREEDS, PER_BREED = 4, 5
COLOUR_MODEL = "workloads.images.synthetic:colour_classifier"

# The outputs of a deployed Helm stack, as `pulumi stack output --json` gives them.
OUTPUTS = {
    "schedulerAddress": "tcp://dask-scheduler.dask.svc:8786",
    "dashboardUrl": "http://10.0.0.5:8787",
    "jupyterUrl": "",
    "daskNamespace": "rapidsai",
    "daskRelease": "dask",
    "datasetMountPath": "/ml-share",
    "datasetLayout": {"dogs_images": "dogs/Images", "dogs_labels": "dogs/imagenet1000_clsidx_to_labels.txt",
                      "models": "models", "taxi": "taxi"},
    "workerCount": 8,
    "gpusPerWorker": 1,
    "threadsPerWorker": 6,
    "daskImage": "ghcr.io/dask/dask:2026.8.0",
    "daskVersion": "2026.8.0",
}
