"""The preview check that the vCenter account holds every privilege the program needs.

``check`` asks vCenter itself, with ``AuthorizationManager.HasPrivilegeOnEntities`` for the
account's own session (``sessionManager.currentSession.key``): for each entity, which of the
privileges it holds there, with every role, group and inherited permission applied as vCenter
applies them. A privilege the account lacks fails ``pulumi preview``, naming the privilege, the
entity and the components that need it, before anything is created. The method needs only
``System.View`` on the entities (pyVmomi 9.1.1 ``_typeinfo_vim.py``, vim.version.version9).

The resource creates nothing on vCenter: ``create`` and ``update`` check again, whatever
``at_preview`` says (``vcenterPrivilegeCheck=false`` spares a read-only preview account the
preview's check), and record what was checked.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic as dyn

from ..access import VCenterAccess
from ..privileges import CLUSTER, DATASTORE, ENTITY_LABELS, ROOT
from .base import VCenterProvider, VCenterResource
from .session import VCenterError, changed_keys, is_unknown, vcenter

logger = logging.getLogger(__name__)
SPEC_KEYS = ("needs", "datacenter", "cluster", "datastore")
ROLE_DOC = 'docs/deploy.md, "The vCenter account"'


def entities(si: Any, datacenter: str, cluster: str, datastore: str | None) -> dict[str, Any]:
    """The managed entities the needs name, by kind; raises naming what is not found."""
    from pyVmomi import vim

    found = {ROOT: si.content.rootFolder}
    dc = next((e for e in si.content.rootFolder.childEntity if isinstance(e, vim.Datacenter) and e.name == datacenter),
              None)
    if dc is None:
        raise VCenterError(f"no datacenter {datacenter!r} on this vCenter")
    view = si.content.viewManager.CreateContainerView(dc.hostFolder, [vim.ClusterComputeResource], True)
    try:
        found[CLUSTER] = next((c for c in view.view if c.name == cluster), None)
    finally:
        view.Destroy()
    if found[CLUSTER] is None:
        raise VCenterError(f"no compute cluster {cluster!r} in datacenter {datacenter!r}")
    if datastore:
        found[DATASTORE] = next((d for d in dc.datastore if d.name == datastore), None)
        if found[DATASTORE] is None:
            raise VCenterError(f"no datastore {datastore!r} in datacenter {datacenter!r}")
    return found


def missing_privileges(si: Any, needs: Mapping[str, Mapping[str, list[str]]], found: Mapping[str, Any]) -> list[str]:
    """One line per privilege the session lacks: privilege, entity, components."""
    manager, session = si.content.authorizationManager, si.content.sessionManager.currentSession.key
    lines = []
    for kind, privileges in needs.items():
        entity = found[kind]
        [result] = manager.HasPrivilegeOnEntities(entity=[entity], sessionId=session, privId=list(privileges))
        granted = {a.privId for a in result.privAvailability or [] if a.isGranted}
        for privilege in privileges:
            if privilege not in granted:
                where = ENTITY_LABELS[kind] + ("" if kind == ROOT else f" {entity.name!r}")
                lines.append(f"{privilege} on {where} (for: {', '.join(privileges[privilege])})")
    return lines


class VCenterPrivilegesProvider(VCenterProvider):
    """Checks the account's privileges; holds no vCenter object."""

    def _missing(self, props: Mapping[str, Any]) -> list[str]:
        conn = self.connection(props)
        with vcenter(conn, "checking the vCenter account's privileges") as si:
            found = entities(si, props["datacenter"], props["cluster"], props.get("datastore"))
            return missing_privileges(si, props["needs"], found)

    def _message(self, props: Mapping[str, Any], missing: list[str]) -> str:
        return (f"the vCenter account {props.get('user')!r} lacks {len(missing)} privilege(s) the program needs: "
                f"{'; '.join(missing)}. Grant them with the role in {ROLE_DOC} (or run as an account that has it)")

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        if news.get("at_preview") is False or any(is_unknown(v) for v in news.values()):
            return dyn.CheckResult(news, [])
        try:
            missing = self._missing(news)
        except VCenterError as exc:
            return dyn.CheckResult(news, [dyn.CheckFailure("needs", str(exc))])
        return dyn.CheckResult(news, [dyn.CheckFailure("needs", self._message(news, missing))] if missing else [])

    def _checked(self, props: Mapping[str, Any]) -> dict[str, Any]:
        missing = self._missing(props)
        if missing:
            raise VCenterError(self._message(props, missing))
        return {k: props.get(k) for k in SPEC_KEYS} | self.stored(props)

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        return dyn.CreateResult("vcenter-privileges", self._checked(props))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        return self.diff_result(olds, news, [], changed_keys(olds, news, SPEC_KEYS))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        return dyn.UpdateResult(self._checked(news))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        logger.info("vCenter privilege check: nothing to remove on vCenter")


class VCenterPrivileges(VCenterResource, module="vsphere", name="VCenterPrivileges"):
    """The account's privileges, checked at preview: ``needs`` is ``{entity kind: {privilege:
    [components]}}`` (``components.vsphere.privileges.by_entity``)."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *,
                 needs: Mapping[str, Mapping[str, list[str]]], datacenter: pulumi.Input[str],
                 cluster: pulumi.Input[str],
                 datastore: pulumi.Input[str] | None = None, at_preview: bool = True,
                 vcenter: VCenterAccess) -> None:
        props = {"needs": needs, "datacenter": datacenter, "cluster": cluster, "datastore": datastore,
                 "at_preview": at_preview}
        super().__init__(VCenterPrivilegesProvider(), name, opts, props, vcenter)
