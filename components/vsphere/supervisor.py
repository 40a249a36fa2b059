"""The Supervisor: an existing one by default, or Workload Management enabled on the
cluster (``vsphere.Supervisor``, vSphere 7 with NSX) when ``supervisorMode=create``.

TKRs (VKrs on vSphere 8 U3 / 9) come from the Supervisor's own content library, not a
namespace's: an existing Supervisor's library is checked (at preview) to hold the
cluster's release and, with ``supervisorSetTkrLibrary``, set to contentLibraryName's; a
created one is enabled with contentLibraryName's library. On vSphere 7 the Supervisor is
its cluster; on 8 and 9 it is addressed by ``supervisorId`` and the program creates no
library (components.vsphere.layer)."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_vsphere as vsphere

from components.settings.model import SupervisorSpec
from components.vsphere.access import VCenterAccess
from components.vsphere.providers.supervisor_library import SupervisorReleaseLibrary, SupervisorTkrLibrary


@dataclass(frozen=True)
class SupervisorArgs:
    spec: SupervisorSpec
    vsphere_version: int
    cluster_id: pulumi.Input[str]
    content_library_id: pulumi.Input[str]
    control_plane_policy_id: pulumi.Input[str]
    tkr: str
    vcenter: VCenterAccess
    release_os: tuple[str, ...] = ()  # vSphere 8/9: OS images of tkr the library must hold (GPU pools' ubuntu)


class Supervisor(pulumi.ComponentResource):
    """``ref`` is what namespaces are created on: the cluster id on vSphere 7, the
    Supervisor id on vSphere 8 and 9."""

    ref: pulumi.Output[str]

    def __init__(self, name: str, args: SupervisorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:Supervisor", name, None, opts)
        self.resource: vsphere.Supervisor | None = None
        self.tkr_library: SupervisorTkrLibrary | None = None
        self.release_library: SupervisorReleaseLibrary | None = None
        if args.spec.mode == "create":
            self.resource = vsphere.Supervisor(
                f"{name}-wcp", **_create_args(args), opts=pulumi.ResourceOptions(parent=self))
            # vSphere 7 Supervisors are addressed by their cluster.
            self.ref = self.resource.cluster
        elif args.vsphere_version >= 8:
            self.release_library = SupervisorReleaseLibrary(
                f"{name}-release-library",
                pulumi.ResourceOptions(parent=self),
                supervisor=args.spec.id,
                tkr=args.tkr,
                library_id=args.content_library_id,
                set_library=args.spec.set_tkr_library,
                os_names=list(args.release_os),
                vcenter=args.vcenter,
            )
            # Namespaces wait for the check: a Supervisor without the release stops the deploy here.
            self.ref = self.release_library.supervisor
        else:
            self.tkr_library = SupervisorTkrLibrary(
                f"{name}-tkr-library",
                pulumi.ResourceOptions(parent=self),
                cluster=args.cluster_id,
                tkr=args.tkr,
                library_id=args.content_library_id,
                set_library=args.spec.set_tkr_library,
                vcenter=args.vcenter,
            )
            # Namespaces wait for the check: a Supervisor without the TKR stops the deploy here.
            self.ref = self.tkr_library.cluster
        self.register_outputs({"ref": self.ref})


def _cidr(text: str) -> dict[str, Any]:
    net = ipaddress.ip_network(text)
    return {"address": str(net.network_address), "prefix": net.prefixlen}


def _list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _create_args(args: SupervisorArgs) -> dict[str, Any]:
    """vsphere.Supervisor's arguments from the ``supervisorCreateSpec`` lines."""
    spec = args.spec.create_spec
    return {
        "cluster": args.cluster_id,
        "content_library": args.content_library_id,
        "storage_policy": args.control_plane_policy_id,
        "dvs_uuid": spec["dvsUuid"],
        "edge_cluster": spec["edgeCluster"],
        "sizing_hint": spec.get("sizeHint", "SMALL"),
        "search_domains": spec["searchDomains"],  # exactly one domain (checked with the settings)
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
