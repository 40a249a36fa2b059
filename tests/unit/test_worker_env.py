"""The worker environment the Helm values set really reaches Dask's worker processes
(the same choices the runner's local cluster makes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from components.dask.podspec import worker_tuning_env

PROBE = textwrap.dedent("""
    import json, os
    def main():
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \\
                Client(cluster) as client:
            names = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
            print(json.dumps(list(client.run(lambda: {k: os.environ.get(k) for k in names}).values())[0]))
    if __name__ == "__main__":
        main()
""")


def worker_environment(extra: dict[str, str]) -> dict:
    # A clean pod: no Dask settings, no thread or allocator variables from this process.
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_") and k not in (
        "LD_PRELOAD", "MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", PROBE], env={**env, **extra}, capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pod_env_gives_workers_their_threads_and_no_malloc_trim():
    seen = worker_environment({e["name"]: e["value"] for e in worker_tuning_env(6, tcmalloc=False)})
    assert seen == {"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "6", "MKL_NUM_THREADS": "6",
                    "OPENBLAS_NUM_THREADS": "6"}


def test_without_it_dask_pins_one_thread_and_trims_malloc():
    seen = worker_environment({})
    assert seen["OMP_NUM_THREADS"] == "1" and seen["MALLOC_TRIM_THRESHOLD_"] == "65536"


def test_tcmalloc_is_preloaded_only_when_asked():
    assert "LD_PRELOAD" in [e["name"] for e in worker_tuning_env(2, tcmalloc=True)]
    assert "LD_PRELOAD" not in [e["name"] for e in worker_tuning_env(2, tcmalloc=False)]


def test_an_image_that_sets_one_thread_is_overridden():
    # The nanny prefers a variable in the pod's environment over Dask's config, and an
    # image may set OMP_NUM_THREADS=1: the values set the plain variables too, which
    # Kubernetes puts over the image's.
    image_env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    pod_env = {e["name"]: e["value"] for e in worker_tuning_env(4, tcmalloc=False)}
    assert worker_environment({**image_env, **pod_env})["OMP_NUM_THREADS"] == "4"
    only_config = {"DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON": pod_env["DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON"]}
    assert worker_environment({**image_env, **only_config})["OMP_NUM_THREADS"] == "1"  # why both are set
