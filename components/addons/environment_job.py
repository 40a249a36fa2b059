"""The environment Job (``workerEnvironment=prepared``): installs the Dask pods' locked
environment once per lock change onto the pip-cache claim, where scheduler, workers and
Jupyter mount it read-only (components/kube/prepared_env.py says what and where).

Why the pip-cache claim and not a claim of its own: it is the stack's RWX claim for Python
packages already (sized by ``pipCachePvcSize``, on every stack), the pods no longer mount pip's
cache with a prepared environment, and the Job keeps pip's wheel cache beside the
environments (``pip/``), so a lock change downloads only the wheels that changed. The paper's
stacks declare the same objects as before.

The Job runs the Dask image itself, so the venv's base interpreter is the one the pods run,
at the pods' path (a venv's scripts name it absolutely). It is unprivileged and hardened as
the data Job, as the Dask pods' user (so the files are theirs, read-only to them through the
mount). The lock reaches it in a ConfigMap; a changed lock is a new directory, a new ConfigMap
content and a new Job (its pod template is immutable), and ``pulumi up`` waits for it before
the DaskCluster and Jupyter: their pods start from a complete environment. The old directory
stays until removed by hand (docs/dask.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import components.facts.dask_facts as facts
import components.kube.prepared_env as prepared_env
from components.artifacts import worker_lock
from components.kube.exposure import confine
from components.kube.network_policy import Outside, api_server_rule, fetch_policy
from components.kube.pod_hardening import hardened_pod, pod_security_context, run_as

JOB_NAME = "dask-environment"
CONFIG_MAP = f"{JOB_NAME}-lock"
SERVICE_ACCOUNT = JOB_NAME
RECORDER_ROLE = f"{JOB_NAME}-recorder"
POD_LABELS = {"app.kubernetes.io/name": JOB_NAME}
PART_OF = {"app.kubernetes.io/part-of": "dask-tkg"}


@dataclass(frozen=True)
class EnvironmentJobArgs:
    image: str  # the Dask image
    namespace: pulumi.Input[str]
    claim: pulumi.Input[str]  # the pip-cache claim
    package_index_url: str
    lock: str  # the lock's text (worker_lock.lock_text())
    outside: Outside  # the cluster's own ranges, which the downloads never reach (network_settings.outside)
    # where the record is read: the people's namespaces (the Dask namespace is always first)
    person_namespaces: tuple[str, ...] = ()
    # the node network (fileShareClients), where the API server's endpoints listen: the record's way out
    api_server_ranges: tuple[str, ...] = ()
    enforces_psp: bool = False
    depends_on: tuple[pulumi.Resource, ...] = ()


def lock_data(lock: str) -> dict[str, str]:
    """The lock ConfigMap's data: the lock and the record's scripts (read by the Job's ``python -I -S``)."""
    return {prepared_env.LOCK_KEY: lock,
            **{name: prepared_env.script(name) for name in (prepared_env.MANIFEST_SCRIPT, prepared_env.RECORD_SCRIPT)}}


def record_namespaces(namespace: str, args: EnvironmentJobArgs) -> list[str]:
    return [namespace, *(n for n in args.person_namespaces if n != namespace)]


def recorder_role(namespace: str) -> dict[str, Any]:
    """In each namespace of the record: ``get`` and ``patch`` of the digests ConfigMap, by name,
    and nothing else (no create: the program makes it; no other ConfigMap: the team's
    admission parameters live beside it)."""
    return {"metadata": {"name": RECORDER_ROLE, "namespace": namespace, "labels": dict(PART_OF)},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": [prepared_env.DIGESTS_CONFIG_MAP], "verbs": ["get", "patch"]}]}


def recorder_binding(namespace: str, job_namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": RECORDER_ROLE, "namespace": namespace, "labels": dict(PART_OF)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RECORDER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": job_namespace}]}


def job_spec(args: EnvironmentJobArgs, claim: str, namespace: str) -> dict[str, Any]:
    """The Job's spec: an init container makes the environment's directory through the whole
    claim, the main one fills it through the subPath the pods mount and records it."""
    subdir = prepared_env.subdir(args.lock)
    whole_claim = {"name": "claim", "mountPath": prepared_env.CLAIM_MOUNT}
    user = facts.pod_user(args.image)
    return {
        "backoffLimit": 4,
        "template": {
            "metadata": {"labels": dict(POD_LABELS)},
            "spec": hardened_pod({
                "restartPolicy": "Never",
                "initContainers": [{
                    "name": "directory", "image": args.image, "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", prepared_env.INIT_SCRIPT],
                    "env": [{"name": "ENV_SUBDIR", "value": subdir}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                  "limits": {"cpu": "500m", "memory": "256Mi"}},
                    "volumeMounts": [whole_claim],
                }],
                "containers": [{
                    "name": "prepare", "image": args.image, "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", prepared_env.JOB_SCRIPT],
                    "env": [{"name": "PACKAGE_INDEX_URL", "value": args.package_index_url},
                            {"name": "PLAIN_HTTP_HOST", "value": prepared_env.plain_http_host(args.package_index_url)},
                            {"name": "LOCK_SHA256", "value": worker_lock.lock_digest(args.lock)},
                            {"name": "RECORD_NAMESPACES", "value": ",".join(record_namespaces(namespace, args))},
                            {"name": "RECORD_KEY", "value": prepared_env.record_key(subdir)},
                            {"name": "RECORD_CONFIG_MAP", "value": prepared_env.DIGESTS_CONFIG_MAP},
                            # the pod's own /tmp: an emptyDir (volume "tmp"), not a shared host path
                            {"name": "HOME", "value": "/tmp"},  # noqa: S108
                            {"name": "PYTHONUNBUFFERED", "value": "1"}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                  "limits": {"cpu": "4", "memory": "4Gi"}},
                    "volumeMounts": [
                        {"name": "claim", "mountPath": prepared_env.ENV_MOUNT, "subPath": subdir},
                        whole_claim,
                        {"name": "lock", "mountPath": prepared_env.LOCK_MOUNT, "readOnly": True},
                        {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 (an emptyDir in the pod)
                    ],
                }],
                "volumes": [
                    {"name": "claim", "persistentVolumeClaim": {"claimName": claim}},
                    {"name": "lock", "configMap": {"name": CONFIG_MAP}},
                    {"name": "tmp", "emptyDir": {}},
                ],
            }, {**run_as(user.uid, user.gid), **pod_security_context(args.enforces_psp)}) | {
                # the one Dask-side pod with a token: the record is a call to the API server
                "serviceAccountName": SERVICE_ACCOUNT, "automountServiceAccountToken": True},
        },
    }


class EnvironmentJob(pulumi.ComponentResource):
    job_name: pulumi.Output[str]
    subdir: str

    def __init__(self, name: str, args: EnvironmentJobArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:addons:EnvironmentJob", name, None, opts)
        self.subdir = prepared_env.subdir(args.lock)
        after = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        lock = k8s.core.v1.ConfigMap(
            f"{name}-lock", metadata={"name": CONFIG_MAP, "namespace": args.namespace, "labels": dict(PART_OF)},
            data=lock_data(args.lock), opts=after)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata={"name": SERVICE_ACCOUNT, "namespace": args.namespace, "labels": dict(PART_OF)},
            automount_service_account_token=False, opts=after)
        record = self._record_objects(name, args, after)
        # Its pod may resolve names, reach the package index and the API server, nothing else.
        egress = confine(f"{name}-egress", args.namespace, lambda ns: job_policy(ns, args),
                         pulumi.ResourceOptions(parent=self))
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"name": JOB_NAME, "namespace": args.namespace,
                      "labels": {"app.kubernetes.io/part-of": "dask-tkg",
                                 "dask-tkg.io/environment": worker_lock.lock_digest(args.lock)[:16]}},
            spec=pulumi.Output.all(args.claim, args.namespace).apply(lambda a: job_spec(args, a[0], a[1])),
            # Awaited (no skipAwait): the Dask pods depend on a complete environment. A changed
            # lock changes the pod template, which a Job cannot update: it is replaced.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[lock, account, *record, egress, *args.depends_on],
                                        delete_before_replace=True,
                                        custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m")),
        )
        self.job_name = self.job.metadata.apply(lambda m: m["name"])
        self.register_outputs({"job_name": self.job_name})

    def _record_objects(self, name: str, args: EnvironmentJobArgs,
                        after: pulumi.ResourceOptions) -> list[pulumi.Resource]:
        """In the Dask namespace and each person's: the digests ConfigMap, made empty (its data
        is the Job's: ``ignore_changes``), and the Job's Role and RoleBinding on it."""
        made: list[pulumi.Resource] = []
        spaces = [("dask", args.namespace), *((n, n) for n in args.person_namespaces)]
        for label, namespace in spaces:
            opts = pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(ignore_changes=["data"]))
            made.append(k8s.core.v1.ConfigMap(f"{name}-digests-{label}", metadata={
                "name": prepared_env.DIGESTS_CONFIG_MAP, "namespace": namespace, "labels": dict(PART_OF)}, opts=opts))
            role = pulumi.Output.from_input(namespace).apply(recorder_role)
            made.append(k8s.rbac.v1.Role(f"{name}-recorder-{label}", metadata=role["metadata"], rules=role["rules"],
                                         opts=after))
            binding = pulumi.Output.all(namespace, args.namespace).apply(lambda a: recorder_binding(a[0], a[1]))
            made.append(k8s.rbac.v1.RoleBinding(f"{name}-recorder-{label}", metadata=binding["metadata"],
                                                role_ref=binding["roleRef"], subjects=binding["subjects"], opts=after))
        return made



def job_policy(namespace: str, args: EnvironmentJobArgs) -> dict[str, Any]:
    """The Job pod's NetworkPolicy: DNS and the package index (``fetch_policy``), and the API
    server's endpoints on the node network (``api_server_rule``) for the record."""
    policy = fetch_policy(namespace, f"{JOB_NAME}-egress", POD_LABELS, [args.package_index_url], args.outside)
    if args.api_server_ranges:
        policy["spec"]["egress"] = [*policy["spec"]["egress"], api_server_rule(args.api_server_ranges)]
    return policy
