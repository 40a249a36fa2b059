"""The content library that holds the Tanzu Kubernetes releases: a subscription the
program makes, or an existing library looked up by name (``contentLibraryExisting``).

An HTTPS subscription needs the subscription server's certificate trusted by vCenter
(its SHA-1 thumbprint); pulumi-vsphere's ``ContentLibrary`` cannot pass one
(terraform-provider-vsphere#1879), so for such a feed subscribe once in the vSphere
Client, accept the thumbprint, and set ``contentLibraryExisting`` (README).
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_vsphere as vsphere

from components.settings.model import ContentLibrarySpec


@dataclass(frozen=True)
class ContentLibraryArgs:
    spec: ContentLibrarySpec
    datastore_id: pulumi.Input[str]
    datacenter_id: pulumi.Input[str] = ""


class ContentLibrary(pulumi.ComponentResource):
    id: pulumi.Output[str]

    def __init__(self, name: str, args: ContentLibraryArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:ContentLibrary", name, None, opts)
        self.library: vsphere.ContentLibrary | None = None
        if args.spec.existing:
            # An invoke: runs at preview, so a missing library stops it with the library's name.
            found = vsphere.get_content_library(name=args.spec.name, opts=pulumi.InvokeOptions(parent=self))
            self.id = pulumi.Output.from_input(found.id)
        else:
            if args.spec.url.startswith("https://"):
                pulumi.log.warn(
                    f"content library {args.spec.name!r}: vCenter syncs {args.spec.url} only if it trusts that"
                    " server's certificate, and pulumi-vsphere cannot pass its thumbprint"
                    " (terraform-provider-vsphere#1879). If the sync fails, subscribe the library in the vSphere"
                    " Client (accepting the thumbprint) and set contentLibraryExisting=true (README).", self)
            self.library = vsphere.ContentLibrary(
                f"{name}-library",
                name=args.spec.name,
                description="Tanzu Kubernetes releases (subscribed)",
                storage_backings=[args.datastore_id],
                subscription=vsphere.ContentLibrarySubscriptionArgs(
                    subscription_url=args.spec.url,
                    authentication_method="NONE",
                    automatic_sync=True,
                    on_demand=args.spec.on_demand,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.id = self.library.id
        self.register_outputs({"id": self.id})


def existing_library_id(name: str, opts: pulumi.InvokeOptions) -> pulumi.Output[str]:
    """The id of the existing library called ``name``, looked up at preview (an invoke), so a
    missing library stops the preview naming it; nothing is created."""
    return pulumi.Output.from_input(vsphere.get_content_library(name=name, opts=opts).id)
