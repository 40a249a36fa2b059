"""VM classes: the custom ones (incl. the vGPU class) and the pre-defined ones offered."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_vsphere as vsphere

from components.settings.model import VmClass


@dataclass(frozen=True)
class VmClassesArgs:
    classes: tuple[VmClass, ...]


class VmClasses(pulumi.ComponentResource):
    """Creates each custom VM class; the pre-defined ones already exist in vCenter.

    ``names`` lists every class the namespace must offer, custom ones resolved from the
    created resources so the namespace waits for them.
    """

    names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: VmClassesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:VmClasses", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.resources: dict[str, vsphere.VirtualMachineClass] = {}
        for vm in args.classes:
            if vm.predefined:
                continue
            self.resources[vm.name] = vsphere.VirtualMachineClass(
                f"{name}-{vm.name}",
                name=vm.name,
                cpus=vm.cpus,
                memory=vm.memory_mb,
                cpu_reservation=vm.cpu_reservation,
                memory_reservation=vm.memory_reservation,
                vgpu_devices=[vm.vgpu_profile] if vm.vgpu_profile else None,
                opts=child,
            )
        created = [r.name for r in self.resources.values()]
        predefined = [vm.name for vm in args.classes if vm.predefined]
        self.names = pulumi.Output.all(*created).apply(lambda names: list(names) + predefined)
        self.register_outputs({"names": self.names})
