"""The rendered releases, read against what the images and the operator really do
(``components/facts/dask_facts.py``, ``components/facts/addon_facts.py``: each fact with its version and
source). A version without a recorded fact fails here, naming the fact to re-check."""
from __future__ import annotations

import ast
import math
import re
import shlex
from pathlib import Path

import pytest

import components.facts.dask_facts as dask_facts
from components.artifacts import worker_lock
from components.facts import addon_facts, support_matrix
from components.settings.model import POOL_ROLE_LABEL
from components.settings.values import cpu_millis, quantity_bytes
from tests.render.helm import Rendered
from tests.render.program import VARIANTS, program_releases
from tests.render.stacks import stack_settings

REPO = Path(__file__).resolve().parents[2]
# NVAIE 1.1's vGPU guest driver for Ubuntu 20.04 nodes: the tag the paper's scripts pulled
# (nvcr.io/nvaie/vgpu-guest-driver:470.63.01-ubuntu20.04, NVAIE 1.1 documentation); and the
# current default on an Ubuntu 22.04 node in the form NVIDIA's NVAIE GPU-operator documentation
# gives (<driver>-ubuntu22.04, ../shared/reference/current-platform.md "Driver"), with vGPU
# 19.0's guest driver (components/facts/support_matrix.py CURRENT_GUEST_DRIVER).
PUBLISHED_DRIVER_IMAGES = {"nvcr.io/nvaie/vgpu-guest-driver:470.63.01-ubuntu20.04",
                           f"nvcr.io/nvaie/vgpu-guest-driver:{support_matrix.CURRENT_GUEST_DRIVER}-ubuntu22.04"}


def rendered(variant: str, chart: str, **config) -> Rendered:
    release = program_releases(variant, **config)[chart]
    return release.render()


def containers(deployment: dict) -> list[dict]:
    return deployment["spec"]["template"]["spec"]["containers"]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def image_facts_of(container: dict) -> dask_facts.ImageFacts:
    facts = dask_facts.image_facts(container["image"])
    assert facts is not None, (f"no facts recorded for {container['image']}: read its Dockerfile and entrypoint"
                               " and add them to components/facts/dask_facts.py IMAGES")
    return facts


def operator_facts(version: str) -> addon_facts.GpuOperatorFacts:
    facts = addon_facts.gpu_operator_facts(version)
    assert facts is not None, (f"no facts recorded for GPU operator {version}: re-check resolveDriverTag and the"
                               " licensing volume in controllers/object_controls.go"
                               " (components/facts/addon_facts.py)")
    return facts


# --- 1. vGPU licensing ---------------------------------------------------------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_driver_gets_the_nls_token(variant):
    release = program_releases(variant)["gpu-operator"]
    policy = release.render().named(
        "ClusterPolicy", "cluster-policy")
    licensing = policy["spec"]["driver"]["licensingConfig"]
    mounted = addon_facts.licensing_files(operator_facts(release.version), licensing)
    assert mounted == {"gridd.conf", "client_configuration_token.tok"}, (
        f"{variant}: the driver container gets only {sorted(mounted)} from {licensing}: without the client"
        " configuration token NLS cannot license the vGPU")


# --- 2. driver image tag -------------------------------------------------------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_operator_pulls_a_driver_image_that_exists(variant):
    release = program_releases(variant)["gpu-operator"]
    driver = release.render().named(
        "ClusterPolicy", "cluster-policy")["spec"]["driver"]
    os_tag = addon_facts.node_os_tag(stack_settings(*VARIANTS[variant]).cluster.kubernetes_version)
    pulled = addon_facts.resolved_driver_image(operator_facts(release.version), driver["repository"],
                                               driver["image"], driver["version"], os_tag)
    assert pulled in PUBLISHED_DRIVER_IMAGES, f"{variant}: the operator would pull {pulled}"


# --- 3. and 4. what the Dask image's entrypoint starts ----------------------------------------

def main_process(container: dict, facts: dask_facts.ImageFacts) -> list[str]:
    """What the entrypoint finally execs: the pod's command replaces ENTRYPOINT (and drops
    CMD), its args replace CMD; the images recorded here end in ``exec "$@"``."""
    if container.get("command"):
        return list(container["command"]) + list(container.get("args") or [])
    return list(container.get("args") or facts.cmd)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_jupyter_runs_in_the_foreground(variant):
    jupyter = containers(rendered(variant, "dask").named("Deployment", "dask-jupyter"))[0]
    facts = image_facts_of(jupyter)
    process = main_process(jupyter, facts)
    assert not jupyter.get("tty") and not jupyter.get("stdin"), "the chart gives the Jupyter container no TTY"
    assert not (len(process) == 1 and process[0] in dask_facts.EXITS_WITHOUT_TTY), (
        f"{variant}: the Jupyter container's main process is {process} ({facts.source}): it exits at once"
        " without a TTY, and the pod restarts in a loop")
    assert process[:2] == ["jupyter", "lab"] and "--NotebookApp.token=''" not in " ".join(process)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_jupyter_reads_the_charts_password_config(variant):
    """The chart's ConfigMap file (its password) must be named on the command line: Jupyter
    Server 1.x/2.x (JupyterLab 3+) reads jupyter_server_config, never a file called
    jupyter_notebook_config (jupyter_core 5.9.1 application.py; dask/helm-chart#512)."""
    release = rendered(variant, "dask")
    deployment = release.named("Deployment", "dask-jupyter")
    jupyter = containers(deployment)[0]
    (config_map,) = [v["configMap"]["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]
                     if v["name"] == "config-volume"]
    (mount,) = [m["mountPath"] for m in jupyter["volumeMounts"] if m["name"] == "config-volume"]
    (key,) = release.named("ConfigMap", config_map)["data"]
    assert "c.NotebookApp.password = 'argon2:" in release.named("ConfigMap", config_map)["data"][key]
    process = main_process(jupyter, image_facts_of(jupyter))
    assert f"--config={mount}/{key}" in process, (
        f"{variant}: Jupyter runs {process}: it never reads {mount}/{key}, so it starts with a random token"
        " instead of the generated password")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_no_pod_starts_an_unauthenticated_jupyterlab(variant):
    for deployment in rendered(variant, "dask").of_kind("Deployment"):
        for container in containers(deployment):
            facts = image_facts_of(container)
            if facts.background_jupyter_unless is None:
                continue
            switch = env_of(container).get(facts.background_jupyter_unless)
            assert (switch or "").lower() in facts.truthy, (
                f"{variant}: {deployment['metadata']['name']} runs {container['image']}, whose entrypoint starts"
                f" jupyter-lab --NotebookApp.token='' unless {facts.background_jupyter_unless} is set"
                f" ({facts.source})")


# --- 5. the workers' tuning reaches the image's Dask -------------------------------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_worker_tuning_uses_the_key_the_images_dask_reads(variant):
    worker = containers(rendered(variant, "dask").named("Deployment", "dask-worker"))[0]
    facts = image_facts_of(worker)
    version = facts.dask_version
    if version is None and any(e["name"] == "VIRTUAL_ENV" for e in worker.get("env", [])):
        version = worker_lock.pins(worker_lock.lock_text())["distributed"]  # the prepared environment's Dask
    fact = dask_facts.nanny_environ_fact(version)
    env = env_of(worker)
    nanny = {name for name in env if name.startswith("DASK_DISTRIBUTED__NANNY__")}
    assert nanny == {fact.variable}, (f"{variant}: Dask {version} reads {fact.key} ({fact.source});"
                                      f" the worker sets {sorted(nanny)}")
    environ = ast.literal_eval(env[fact.variable])
    threads = worker["args"][worker["args"].index("--nthreads") + 1]
    assert {environ[name] for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {threads}
    assert fact.none_unsets or None not in environ.values(), f"Dask {version} would set 'None'"


# --- 6. placement, with a rollout's extra pod --------------------------------------------------

def _surge(deployment: dict) -> int:
    strategy = deployment["spec"].get("strategy") or {"type": "RollingUpdate"}
    if strategy["type"] == "Recreate":
        return 0
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")  # Kubernetes' default
    replicas = deployment["spec"].get("replicas", 1)
    return math.ceil(replicas * int(surge[:-1]) / 100) if isinstance(surge, str) else int(surge)


def pods_per_role(objects: Rendered, with_surge: bool) -> dict[str, list[tuple[str, int, int, int]]]:
    """role -> (pod, millicores, bytes, GPUs) of every pod a Deployment pins to a pool role."""
    out: dict[str, list] = {}
    for deployment in objects.of_kind("Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        role = (spec.get("nodeSelector") or {}).get(POOL_ROLE_LABEL)
        if role is None:
            continue
        requests = containers(deployment)[0]["resources"]["requests"]
        limits = containers(deployment)[0]["resources"].get("limits") or {}
        pod = (deployment["metadata"]["name"], cpu_millis(str(requests["cpu"])), quantity_bytes(requests["memory"]),
               int(limits.get("nvidia.com/gpu", 0)))
        count = deployment["spec"]["replicas"] + (_surge(deployment) if with_surge else 0)
        out.setdefault(role, []).extend([pod] * count)
    return out


def unplaced(pods: list[tuple[str, int, int, int]], nodes: list[list[int]]) -> list[str]:
    """First fit, largest first; the pods that found no node."""
    left = []
    for name, cpu, memory, gpus in sorted(pods, key=lambda p: (p[3], p[1], p[2]), reverse=True):
        node = next((n for n in nodes if n[0] >= cpu and n[1] >= memory and n[2] >= gpus), None)
        if node is None:
            left.append(name)
            continue
        node[0], node[1], node[2] = node[0] - cpu, node[1] - memory, node[2] - gpus
    return left


def role_nodes(variant: str, role: str) -> list[list[int]]:
    s = stack_settings(*VARIANTS[variant])
    return [[s.vm_class(p.vm_class).cpus * 1000, s.vm_class(p.vm_class).memory_mb * 2**20,
             1 if s.vm_class(p.vm_class).has_gpu else 0]
            for p in s.cluster.pools(role) for _ in range(p.replicas)]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_pods_pinned_to_a_pool_fit_its_nodes_together(variant):
    for role, pods in pods_per_role(rendered(variant, "dask"), with_surge=False).items():
        assert unplaced(pods, role_nodes(variant, role)) == [], f"{variant}: role={role} cannot hold {pods}"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_rollout_either_fits_or_is_warned_about_at_preview(variant):
    objects = rendered(variant, "dask")
    worker = objects.named("Deployment", "dask-worker")
    assert _surge(worker) == 0, f"{variant}: a worker rollout needs {_surge(worker)} more GPU node(s)"
    for role, pods in pods_per_role(objects, with_surge=True).items():
        stuck = unplaced(pods, role_nodes(variant, role))
        if stuck:
            from components.settings.placement import placement_warnings

            warnings = placement_warnings(stack_settings(*VARIANTS[variant]))
            assert any(stuck[0] in w and f"role={role}" in w for w in warnings), (variant, stuck, warnings)


# --- 7. smaller ones ---------------------------------------------------------------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_dask_keeps_memory_headroom_below_the_container_limit(variant):
    worker = containers(rendered(variant, "dask").named("Deployment", "dask-worker"))[0]
    args = worker["args"]
    # click keeps the last value of a repeated option (dask_facts.CLICK_LAST_OPTION_WINS)
    dask_limit = [args[i + 1] for i, a in enumerate(args) if a == "--memory-limit"][-1]
    container_limit = quantity_bytes(worker["resources"]["limits"]["memory"])
    assert quantity_bytes(dask_limit) <= container_limit * 0.9, (dask_limit, container_limit)


WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_notebook_cannot_change_the_cluster(variant):
    objects = rendered(variant, "dask")
    jupyter_sa = objects.named("Deployment", "dask-jupyter")["spec"]["template"]["spec"].get(
        "serviceAccountName", "default")
    roles = {r["metadata"]["name"]: r for r in objects.of_kind("Role")}
    for binding in objects.of_kind("RoleBinding"):
        if any(s.get("name") == jupyter_sa for s in binding["subjects"]):
            for rule in roles[binding["roleRef"]["name"]]["rules"]:
                assert not WRITE_VERBS & set(rule["verbs"]), f"{variant}: {jupyter_sa} may {rule}"


@pytest.mark.parametrize("variant", ["reference", "reference-dev"])
def test_the_nfs_provisioner_image_comes_from_the_live_registry(variant):
    deployment = rendered(variant, "nfs-subdir-external-provisioner").named(
        "Deployment", "nfs-subdir-external-provisioner")
    image = containers(deployment)[0]["image"]
    assert image.startswith(addon_facts.NFS_IMAGE_REGISTRY.what + "/"), (image, addon_facts.NFS_IMAGE_REGISTRY.source)


@pytest.mark.parametrize("variant", ["reference", "reference-dev"])
def test_the_nfs_provisioner_image_is_pinned_by_the_promoters_digest(variant):
    """The rendered image names v4.0.2 and the digest registry.k8s.io's promoter manifest
    records for it, so no later push under the tag reaches the node (values.NFS_PROVISIONER_DIGEST)."""
    from components.addons.values import NFS_PROVISIONER_DIGEST
    from components.artifacts.images import ImageRef

    deployment = rendered(variant, "nfs-subdir-external-provisioner").named(
        "Deployment", "nfs-subdir-external-provisioner")
    ref = ImageRef.parse(containers(deployment)[0]["image"])
    assert (ref.tag, ref.digest) == ("v4.0.2", NFS_PROVISIONER_DIGEST), ref


@pytest.mark.parametrize("variant", ["reference", "reference-dev"])
def test_the_nfs_storage_class_does_not_offer_expansion(variant):
    storage_class = rendered(variant, "nfs-subdir-external-provisioner").named("StorageClass", "nfs-external")
    assert storage_class["allowVolumeExpansion"] is False, addon_facts.NFS_NO_EXPANSION.source


def readme_topology_b_settings() -> dict:
    """The ``pulumi config set KEY VALUE`` commands of the README's topology-B sentence."""
    text = (REPO / "README.md").read_text()
    sentence = text[text.index("Topology B"):]
    sentence = sentence[:sentence.index("\n\n")]
    commands = re.findall(r"`pulumi config set ([^`]+)`", sentence)
    assert commands, "the README gives no topology-B command"
    parsed = {}
    for command in commands:
        key, value = shlex.split(command)
        parsed[key] = {"true": True, "false": False}.get(value, int(value) if value.isdigit() else value)
    return parsed


def test_the_readmes_topology_b_commands_work_on_the_reference_stack():
    config = readme_topology_b_settings()
    objects = rendered("reference", "dask", **config)
    jupyter = containers(objects.named("Deployment", "dask-jupyter"))[0]
    assert jupyter["resources"]["limits"].get("nvidia.com/gpu") == 1
    assert objects.named("Deployment", "dask-worker")["spec"]["replicas"] == 7


def test_the_chart_scripts_are_flagged_for_a_dask_without_them():
    """dask chart 2024.1.1 runs ``dask-scheduler``/``dask-worker`` (its templates, read from the
    pinned archive here); distributed 2026.6.0 removed them (dask/distributed #9240): preview
    warns for such an image, and not for the paper's 2021.09.1."""
    import tarfile

    import components.facts.dask_facts as facts
    from tests.artifacts import DASK_CHART, artifact_path

    with tarfile.open(artifact_path(DASK_CHART)) as chart:
        scheduler = chart.extractfile("dask/templates/dask-scheduler-deployment.yaml").read().decode()
        values = chart.extractfile("dask/values.yaml").read().decode()
    assert "- dask-scheduler" in scheduler and 'dask_worker: "dask-worker"' in values
    assert facts.chart_script_warning("2021.09.1") is None
    warning = facts.chart_script_warning("2026.7.1")
    assert "removed in 2026.6.0" in warning and "daskBackend=operator" in warning
