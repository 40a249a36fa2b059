"""The Supervisor: an existing one by default, or Workload Management enabled on the
cluster (``vsphere.Supervisor``, vSphere 7 with NSX) when ``supervisorMode=create``."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_vsphere as vsphere

from components.settings.model import SupervisorSpec


@dataclass(frozen=True)
class SupervisorArgs:
    spec: SupervisorSpec
    vsphere_version: int
    cluster_id: pulumi.Input[str]
    content_library_id: pulumi.Input[str]
    control_plane_policy_id: pulumi.Input[str]


class Supervisor(pulumi.ComponentResource):
    """``ref`` is what namespaces are created on: the cluster id on vSphere 7, the
    Supervisor id on vSphere 8."""

    ref: pulumi.Output[str]

    def __init__(self, name: str, args: SupervisorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:Supervisor", name, None, opts)
        self.resource: vsphere.Supervisor | None = None
        if args.spec.mode == "create":
            self.resource = vsphere.Supervisor(
                f"{name}-wcp", **_create_args(args), opts=pulumi.ResourceOptions(parent=self))
            # vSphere 7 Supervisors are addressed by their cluster.
            self.ref = self.resource.cluster
        elif args.vsphere_version >= 8:
            self.ref = pulumi.Output.from_input(args.spec.id)
        else:
            self.ref = pulumi.Output.from_input(args.cluster_id)
        self.register_outputs({"ref": self.ref})


def _cidr(text: str) -> dict:
    net = ipaddress.ip_network(text)
    return {"address": str(net.network_address), "prefix": net.prefixlen}


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _create_args(args: SupervisorArgs) -> dict:
    """vsphere.Supervisor's arguments from the ``supervisorCreateSpec`` lines."""
    spec = args.spec.create_spec
    return {
        "cluster": args.cluster_id,
        "content_library": args.content_library_id,
        "storage_policy": args.control_plane_policy_id,
        "dvs_uuid": spec["dvsUuid"],
        "edge_cluster": spec["edgeCluster"],
        "sizing_hint": spec.get("sizeHint", "SMALL"),
        "search_domains": spec.get("searchDomains", ""),
        "main_dns": _list(spec["masterDns"]),
        "worker_dns": _list(spec["workerDns"]),
        "main_ntps": _list(spec["masterNtp"]),
        "worker_ntps": _list(spec.get("workerNtp", spec["masterNtp"])),
        "management_network": vsphere.SupervisorManagementNetworkArgs(
            network=spec["managementNetwork"],
            starting_address=spec["managementStartIp"],
            subnet_mask=spec["managementSubnetMask"],
            gateway=spec["managementGateway"],
            address_count=int(spec.get("managementAddressCount", "5")),
        ),
        "egress_cidrs": [vsphere.SupervisorEgressCidrArgs(**_cidr(c)) for c in _list(spec["egressCidr"])],
        "ingress_cidrs": [vsphere.SupervisorIngressCidrArgs(**_cidr(c)) for c in _list(spec["ingressCidr"])],
        "pod_cidrs": [vsphere.SupervisorPodCidrArgs(**_cidr(c)) for c in _list(spec["podCidr"])],
        "service_cidr": vsphere.SupervisorServiceCidrArgs(**_cidr(spec["serviceCidr"])),
    }
