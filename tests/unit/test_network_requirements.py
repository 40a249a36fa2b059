"""The network a stack needs, derived from its own settings: what the workload cluster's nodes
and pods reach (the registries of every image it deploys, the data hosts, the package index,
the licence server), what the machine running Pulumi reaches (vCenter, the Supervisor, the
chart archives, Pulumi's plugins) and what vCenter itself fetches. A changed setting changes
the list, so the list cannot go stale."""
from __future__ import annotations

import subprocess
import sys

import yaml

from components.settings import network_requirements as network
from tests.render.stacks import stack_settings

DIGEST = "sha256:" + "d2" * 32
DOCKER_HUB = {("registry-1.docker.io", 443), ("auth.docker.io", 443), ("production.cloudflare.docker.com", 443)}


def where(stack: str = "dev", **config) -> dict[str, set[tuple[str, int]]]:
    needs = network.requirements(stack_settings(stack, config))
    return {source: {(e.host, e.port) for e in endpoints} for source, endpoints in needs.items()}


def test_the_dev_stack_reaches_its_registries_data_hosts_package_index_and_licence_server():
    cluster = where()["cluster"]
    assert {("nvcr.io", 443), ("registry.k8s.io", 443), ("ghcr.io", 443)} <= cluster  # GPU operator, NFS, Dask operator
    assert cluster >= DOCKER_HUB  # daskImage and dataJobImage are Docker Hub's python images
    assert {("vision.stanford.edu", 443), ("gist.githubusercontent.com", 443), ("download.pytorch.org", 443),
            ("d37ci6vzurychx.cloudfront.net", 443)} <= cluster  # the data Job's downloads
    assert {("pypi.org", 443), ("files.pythonhosted.org", 443)} <= cluster  # the environment Job's index
    assert ("api.cls.licensing.nvidia.com", 443) in cluster  # the vGPU licence (CLS)
    assert {("archive.ubuntu.com", 80), ("security.ubuntu.com", 80)} <= cluster  # the driver container's packages


def test_the_pulumi_machine_reaches_vcenter_the_supervisor_chart_hosts_and_plugin_downloads():
    pulumi = where()["pulumi"]
    assert {("vcenter.lab.example", 443), ("10.20.0.2", 443), ("10.20.0.2", 6443)} <= pulumi
    assert {("nvidia.github.io", 443), ("github.com", 443), ("helm.dask.org", 443)} <= pulumi  # chart archives
    assert {("api.github.com", 443), ("get.pulumi.com", 443)} <= pulumi  # provider plugins


def test_another_image_registry_changes_the_list():
    harbor = f"harbor.lab.example/library/python:3.11.15-slim-bookworm@{DIGEST}"
    one = where(daskImage=harbor)["cluster"]
    assert ("harbor.lab.example", 443) in one and one >= DOCKER_HUB  # the data Job still pulls from Docker Hub
    both = where(daskImage=harbor, dataJobImage=f"harbor.lab.example:5000/library/python:3.12@{DIGEST}")["cluster"]
    assert {("harbor.lab.example", 443), ("harbor.lab.example", 5000)} <= both
    assert not DOCKER_HUB & both


def test_another_driver_registry_changes_the_list():
    cluster = where(vgpuDriverRepository="registry.lab.example/nvaie")["cluster"]
    assert ("registry.lab.example", 443) in cluster
    assert ("nvcr.io", 443) in cluster  # the GPU operator's own images stay NVIDIA's


def test_a_data_url_changes_the_list():
    cluster = where(dogsImagesUrl="https://mirror.lab.example:8443/dogs/images.tar")["cluster"]
    assert ("mirror.lab.example", 8443) in cluster
    assert ("vision.stanford.edu", 443) not in cluster
    assert ("d37ci6vzurychx.cloudfront.net", 443) not in where(dataPrepEnabled=False)["cluster"]


def test_a_package_mirror_replaces_pypi():
    cluster = where(packageIndexUrl="https://pypi.lab.example/simple")["cluster"]
    assert ("pypi.lab.example", 443) in cluster
    assert not {("pypi.org", 443), ("files.pythonhosted.org", 443)} & cluster


def test_the_paper_stack_reaches_its_own_registries_and_vcenter_its_content_library():
    needs = where("reference")
    assert {("k8s.gcr.io", 443), ("nvcr.io", 443)} <= needs["cluster"]  # NFD v0.8.2, the RAPIDS 21.10 image
    assert ("ghcr.io", 443) not in needs["cluster"]  # the Helm backend: no Dask operator
    assert needs["vcenter"] == {("wp-content.vmware.com", 443)}  # the TKR library's subscription


def test_each_entry_says_what_needs_it():
    for endpoints in network.requirements(stack_settings("dev", {})).values():
        for endpoint in endpoints:
            assert endpoint.why and endpoint.port > 0, endpoint


def test_the_stack_file_is_read_without_its_secrets(tmp_path):
    """A stack file holds its secrets encrypted (``secure:``): the list needs none of them."""
    config = yaml.safe_load((network.REPO / "Pulumi.dev.yaml").read_text())["config"]
    config["vsphere:password"] = {"secure": "v1:c2VjcmV0LWNpcGhlcnRleHQ="}
    config["dask-tkg:ngcApiKey"] = {"secure": "v1:bmdjLWNpcGhlcnRleHQ="}
    stack_file = tmp_path / "Pulumi.site.yaml"
    stack_file.write_text(yaml.safe_dump({"config": config}))
    text = network.markdown(network.requirements(network.stack_file_settings(stack_file)))
    assert "nvcr.io" in text and "v1:" not in text and "ciphertext" not in text


def test_the_command_prints_the_list_for_a_stack():
    done = subprocess.run([sys.executable, "-m", "components.settings.network_requirements", "--stack", "dev"],
                          check=False, capture_output=True, text=True, cwd=network.REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "`nvcr.io`" in done.stdout and "`vcenter.lab.example`" in done.stdout
