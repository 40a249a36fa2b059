"""The preflight names each worker and what it lacks, in one error."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workloads.cluster import preflight
from workloads.core.errors import PreflightError

REPO = Path(__file__).resolve().parents[2]


def test_healthy_cluster_passes_and_auto_resolves_to_cpu(client, workers):
    checked = preflight.check(client, workers, ("torch", "torchvision"), "auto")
    assert checked.device == "cpu"
    assert sorted(checked.workers) == workers
    assert checked.workers[workers[0]]["versions"]["torch"]


def test_cuda_without_a_gpu_names_every_worker(client, workers):
    with pytest.raises(PreflightError) as caught:
        preflight.check(client, workers, ("torch",), "cuda")
    message = str(caught.value)
    assert message.startswith("preflight failed on 2 of 2 workers")
    for address in workers:
        assert address in message
    assert "torch.cuda.is_available() is False" in message


def test_version_mismatch_names_the_worker(client, workers):
    """distributed reports a process's versions from package metadata
    (distributed/versions.py ``_version_cached``); one worker is made to report another."""
    def set_version(value):
        import distributed.versions as versions

        if value is None:
            versions._version_cached = versions._real_version_cached
            return None
        versions._real_version_cached = getattr(versions, "_real_version_cached", versions._version_cached)
        real = versions._real_version_cached
        versions._version_cached = lambda pkg: value if pkg == "distributed" else real(pkg)
        return real("distributed")

    client.run(set_version, "0.0.bad", workers=[workers[0]])
    try:
        with pytest.raises(PreflightError) as caught:
            preflight.check(client, workers, (), "cpu")
    finally:
        client.run(set_version, None, workers=[workers[0]])
    message = str(caught.value)
    assert "failed on 1 of 2 workers" in message
    assert f"{workers[0]} (name" in message and workers[1] not in message
    assert "distributed 0.0.bad != client" in message
    preflight.check(client, workers, (), "cpu")  # restored


def test_package_missing_on_one_worker_names_worker_and_package(client, workers, tmp_path):
    (tmp_path / "only_on_one_worker.py").write_text("VALUE = 1\n")

    def add_path(path, add):
        (sys.path.insert(0, path) if add else sys.path.remove(path))
        sys.modules.pop("only_on_one_worker", None)

    client.run(add_path, str(tmp_path), True, workers=[workers[0]])
    try:
        with pytest.raises(PreflightError) as caught:
            preflight.check(client, workers, ("torch", "only_on_one_worker"), "cpu")
    finally:
        client.run(add_path, str(tmp_path), False, workers=[workers[0]])
    message = str(caught.value)
    assert "failed on 1 of 2 workers" in message
    assert workers[1] in message and workers[0] not in message
    assert "missing package 'only_on_one_worker'" in message and "No module named" in message


def test_shipped_archive_imports_without_the_checkout(tmp_path, monkeypatch):
    uploaded = []

    class FakeClient:
        def upload_file(self, path):
            uploaded.append(path)

    preflight.ship_project(FakeClient())
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import workloads.images.benchmark as b, workloads.contract;"
            " import workloads; assert workloads.__file__.startswith(sys.argv[1]); print(b.NAME)")
    done = subprocess.run([sys.executable, "-c", code, uploaded[0]], check=False, capture_output=True, text=True,
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "images"


def test_installed_package_ships_the_files_of_its_own_record(tmp_path):
    """Installed with pip (here: into a target folder), the shipped archive is rebuilt from
    the distribution's RECORD, not from the checkout."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(REPO)], check=True, capture_output=True, timeout=300)
    code = ("import sys, zipfile, pathlib; from workloads.cluster import preflight;"
            " assert preflight.PACKAGE_DIR.is_relative_to(pathlib.Path(sys.argv[1]));"
            " files = preflight._installed_files(); assert files, 'no RECORD files';"
            " archive = preflight.project_wheel(pathlib.Path(sys.argv[2]));"
            " names = zipfile.ZipFile(archive).namelist();"
            " print(len(names), 'workloads/contract.py' in names, 'workloads/core/dask-tkg.yaml' in names)")
    shipped = tmp_path / "out"
    shipped.mkdir()
    done = subprocess.run([sys.executable, "-c", code, str(target), str(shipped)], check=False, capture_output=True,
                          text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(target)},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    count, has_contract, has_defaults = done.stdout.split()
    assert int(count) > 50 and has_contract == "True" and has_defaults == "True"


def test_metadata_left_in_a_checkout_that_lists_moved_files_is_not_shipped(tmp_path):
    """``pip install <checkout>`` leaves ``dask_tkg.egg-info`` in the checkout; after a file
    moves, its list names files that are gone, so the archive is built from the sources."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "workloads").symlink_to(REPO / "workloads")
    info = checkout / "dask_tkg.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: dask-tkg\nVersion: 0.1.0\n")
    (info / "SOURCES.txt").write_text("workloads/__init__.py\nworkloads/moved_away.py\n")
    code = "from workloads.cluster import preflight; print(preflight._installed_files())"
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=checkout,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkout)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
