"""Local cluster sizing and the worker environment chosen for torch."""
from __future__ import annotations

import os

import pytest

from workloads.cluster import local


def test_plan_sizes_threads_and_environment():
    plan = local.plan(2, cores=8, gpus=0, allocator="glibc")
    assert (plan.n_workers, plan.threads_per_worker, plan.allocator) == (2, 4, "glibc")
    assert plan.environ["MALLOC_TRIM_THRESHOLD_"] is None  # unset: it slows torch
    assert plan.environ["OMP_NUM_THREADS"] == plan.environ["MKL_NUM_THREADS"] == "4"
    assert "LD_PRELOAD" not in plan.environ
    assert local.plan(None, cores=6, gpus=0).n_workers == 6
    assert local.plan(8, cores=2, gpus=0, cap=True).n_workers == 2  # a profile's size, capped
    oversubscribed = local.plan(4, cores=2, gpus=0)
    assert (oversubscribed.n_workers, oversubscribed.threads_per_worker) == (4, 1)
    with pytest.raises(ValueError, match="allocator"):
        local.plan(1, allocator="jemalloc")


@pytest.mark.skipif(local.find_tcmalloc() is None, reason="libtcmalloc-minimal4 not installed")
def test_tcmalloc_is_preloaded_when_installed():
    plan = local.plan(1, cores=2, gpus=0)
    assert plan.allocator == "tcmalloc" and local.find_tcmalloc() in plan.environ["LD_PRELOAD"]


def test_workers_got_the_environment_and_this_process_kept_its_own(client):
    def read():
        import os

        with open("/proc/self/maps") as fh:
            maps = fh.read()
        return {"trim": os.environ.get("MALLOC_TRIM_THRESHOLD_"), "omp": os.environ.get("OMP_NUM_THREADS"),
                "tcmalloc": "libtcmalloc" in maps}

    seen = list(client.run(read).values())
    assert seen and all(s["trim"] is None and s["omp"] == "1" for s in seen)
    if local.find_tcmalloc():
        assert all(s["tcmalloc"] for s in seen)
    assert "libtcmalloc" not in os.environ.get("LD_PRELOAD", "")


def test_worker_environ_restores_this_process(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with local.worker_environ({"OMP_NUM_THREADS": "2", "MALLOC_TRIM_THRESHOLD_": None}):
        import dask

        assert os.environ["OMP_NUM_THREADS"] == "2" and "MALLOC_TRIM_THRESHOLD_" not in os.environ
        assert dask.config.get("distributed.nanny.pre-spawn-environ")["OMP_NUM_THREADS"] == "2"
    assert os.environ["OMP_NUM_THREADS"] == "7" and os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"


def test_a_worker_killed_again_before_the_cluster_gave_up_on_it_comes_back():
    """Dask's cluster object closes a nanny for good when, a fixed time after its worker left
    (``distributed.deploy.lost-worker-timeout``, 15 s by default), no worker of that name is
    connected: a worker killed, restarted and killed again just before that moment was never
    replaced. The local cluster keeps the nanny, and the nanny brings the worker back."""
    import signal
    import time

    from distributed import Client

    default_s = 15  # distributed.yaml: deploy.lost-worker-timeout
    cluster = local.start(local.plan(2, device="cpu", threads_per_worker=1), dashboard_address=":0")
    client = Client(cluster, set_as_default=False)
    try:
        client.wait_for_workers(2)

        def kill_worker_named(name: str) -> float:
            address = next(a for a, w in client.scheduler_info()["workers"].items() if str(w["name"]) == name)
            os.kill(client.run(os.getpid, workers=[address])[address], signal.SIGKILL)
            return time.monotonic()

        def wait_for_worker_named(name: str, timeout: float) -> bool:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                names = client.run_on_scheduler(lambda dask_scheduler: [str(w.name) for w in
                                                                        dask_scheduler.workers.values()])
                if name in names:
                    return True
                time.sleep(0.1)
            return False

        first_loss = kill_worker_named("0")
        time.sleep(1)
        assert wait_for_worker_named("0", default_s - 3), "the first restart took too long to test the second"
        time.sleep(max(0.0, first_loss + default_s - 0.2 - time.monotonic()))
        kill_worker_named("0")  # its restart is under way when the first loss's timer fires
        time.sleep(max(0.0, first_loss + default_s + 2 - time.monotonic()))  # past that moment
        assert 0 in cluster.workers, "the cluster closed worker 0's nanny"
        assert wait_for_worker_named("0", 60), "worker 0 was not replaced after its second loss"
    finally:
        client.close()
        cluster.close()
