"""vSAN storage policies through SPBM, and the ``VsanStoragePolicy`` dynamic resource.

pulumi-vsphere's ``VmStoragePolicy`` only expresses tag rules; RAID level and
stripe width need SPBM capability profiles in the ``VSAN`` namespace. Rules are
a dict ``{capability_id: value}``, for example the paper's two policies::

    {"hostFailuresToTolerate": 1, "replicaPreference": "RAID-5/6 (Erasure Coding) - Capacity"}
    {"hostFailuresToTolerate": 1, "replicaPreference": "RAID-1 (Mirroring) - Performance", "stripeWidth": 8}

The functions taking ``pm`` (SPBM's ``ProfileManager``) are the whole vCenter
side; the provider only adds adoption, the update fallback and Pulumi plumbing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic as dyn

from ..access import VCenterAccess
from .base import VCenterProvider, VCenterResource
from .session import VCenterError, changed_keys, is_unknown, pbm_service, vcenter

logger = logging.getLogger(__name__)

NAMESPACE = "VSAN"
RAID1 = "RAID-1 (Mirroring) - Performance"
RAID5_6 = "RAID-5/6 (Erasure Coding) - Capacity"

#: VSAN capability id -> (type, allowed values or None).
CAPABILITIES: dict[str, tuple[type, tuple[Any, ...] | None]] = {
    "hostFailuresToTolerate": (int, (0, 1, 2, 3)),
    "replicaPreference": (str, (RAID1, RAID5_6)),
    "stripeWidth": (int, tuple(range(1, 13))),
    "proportionalCapacity": (int, tuple(range(101))),
    "cacheReservation": (int, None),
    "checksumDisabled": (bool, None),
    "forceProvisioning": (bool, None),
    "iopsLimit": (int, None),
    "subFailuresToTolerate": (int, (0, 1, 2, 3)),
}

Rules = dict[str, Any]


class StoragePolicyConflict(VCenterError):
    """A policy with the wanted name exists with other rules."""


@dataclass(frozen=True)
class Policy:
    """A storage policy as read back from SPBM."""

    policy_id: str
    name: str
    description: str
    rules: Rules


def validate_rules(rules: Mapping[str, Any], policy_name: str = "") -> Rules:
    """Check ``rules`` against the known VSAN capabilities; returns a plain dict.

    Raises
    ------
    ValueError
        Naming the policy, the capability and what is allowed.
    """
    where = f"storage policy {policy_name!r}: " if policy_name else ""
    if not rules:
        raise ValueError(f"{where}rules: at least one VSAN capability is required")
    out: Rules = {}
    for key, given in rules.items():
        value = given
        if key not in CAPABILITIES:
            raise ValueError(f"{where}rules: unknown VSAN capability {key!r}; known: {', '.join(CAPABILITIES)}")
        kind, allowed = CAPABILITIES[key]
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)  # Pulumi passes numbers as floats
        if type(value) is not kind:
            raise ValueError(f"{where}rules.{key}: expected {kind.__name__}, got {value!r}")
        if allowed is not None and value not in allowed:
            shown = f"{allowed[0]}-{allowed[-1]}" if kind is int else " | ".join(map(repr, allowed))
            raise ValueError(f"{where}rules.{key}: {value!r} is not one of {shown}")
        out[key] = value
    return out


def rule_differences(actual: Rules, wanted: Rules) -> list[str]:
    """Human-readable ``key: server X, wanted Y`` lines for every differing rule."""
    unset = "(unset)"
    return [
        f"{key}: server {actual.get(key, unset)!r}, wanted {wanted.get(key, unset)!r}"
        for key in sorted(set(actual) | set(wanted))
        if actual.get(key, unset) != wanted.get(key, unset)
    ]


def _storage() -> Any:
    from pyVmomi import pbm

    return pbm.profile.ResourceType(resourceType="STORAGE")


def build_constraints(rules: Rules) -> Any:
    """``SubProfileCapabilityConstraints`` with one ``VSAN`` sub-profile holding ``rules``."""
    from pyVmomi import pbm

    capabilities = [
        pbm.capability.CapabilityInstance(
            id=pbm.capability.CapabilityMetadata.UniqueId(namespace=NAMESPACE, id=key),
            constraint=[
                pbm.capability.ConstraintInstance(
                    propertyInstance=[pbm.capability.PropertyInstance(id=key, value=value)]
                )
            ],
        )
        for key, value in rules.items()
    ]
    return pbm.profile.SubProfileCapabilityConstraints(
        subProfiles=[pbm.profile.SubProfileCapabilityConstraints.SubProfile(name=NAMESPACE, capability=capabilities)]
    )


def build_create_spec(name: str, description: str, rules: Rules) -> Any:
    """The ``CapabilityBasedProfileCreateSpec`` for a vSAN requirement policy."""
    from pyVmomi import pbm

    return pbm.profile.CapabilityBasedProfileCreateSpec(
        name=name,
        description=description,
        category="REQUIREMENT",
        resourceType=_storage(),
        constraints=build_constraints(rules),
    )


def rules_of(profile: Any) -> Rules:
    """The ``VSAN`` capability values of a retrieved profile, as a dict."""
    rules: Rules = {}
    sub_profiles = getattr(profile.constraints, "subProfiles", None) or []
    for sub in sub_profiles:
        for capability in sub.capability or []:
            if capability.id.namespace != NAMESPACE:
                continue
            for constraint in capability.constraint or []:
                for prop in constraint.propertyInstance or []:
                    rules[prop.id] = prop.value
    return rules


def _policy(profile: Any) -> Policy:
    return Policy(profile.profileId.uniqueId, profile.name, profile.description or "", rules_of(profile))


def profile_manager(si: Any) -> Any:
    """SPBM's ``ProfileManager`` for a logged-in vCenter ``ServiceInstance``."""
    return pbm_service(si).profileManager


def list_policies(pm: Any) -> list[Policy]:
    """Every storage requirement policy on the server."""
    ids = pm.PbmQueryProfile(resourceType=_storage(), profileCategory="REQUIREMENT")
    if not ids:
        return []
    return [_policy(p) for p in pm.PbmRetrieveContent(profileIds=list(ids))]


def find_policies(pm: Any, name: str) -> list[Policy]:
    """Policies called ``name`` (vCenter allows one; a simulator may hold several)."""
    return [p for p in list_policies(pm) if p.name == name]


def read_policy(pm: Any, policy_id: str) -> Policy | None:
    """The policy with ``policy_id``, or ``None`` when it does not exist."""
    from pyVmomi import pbm, vmodl

    try:
        found = pm.PbmRetrieveContent(profileIds=[pbm.profile.ProfileId(uniqueId=policy_id)])
    except (vmodl.fault.InvalidArgument, pbm.fault.NotFound):
        return None
    return _policy(found[0]) if found else None


def create_policy(pm: Any, name: str, description: str, rules: Rules) -> str:
    """Create a vSAN policy; returns its ``PbmProfileId.uniqueId``."""
    policy_id: str = pm.PbmCreate(createSpec=build_create_spec(name, description, rules)).uniqueId
    return policy_id


def delete_policy(pm: Any, policy_id: str) -> None:
    """Delete a policy; raises when SPBM reports a failure for it."""
    from pyVmomi import pbm

    outcomes = pm.PbmDelete(profileId=[pbm.profile.ProfileId(uniqueId=policy_id)]) or []
    for outcome in outcomes:
        if outcome.fault is not None:
            raise VCenterError(f"deleting storage policy {policy_id} failed: {outcome.fault.msg or outcome.fault}")


def update_policy(pm: Any, policy_id: str, name: str, description: str, rules: Rules, *, recreate: bool = True) -> str:
    """Update a policy in place with ``PbmUpdate``; returns the policy's id.

    Where the server does not serve ``PbmUpdate`` (govmomi's simulator) and
    ``recreate`` is true, deletes and re-creates the policy instead, logs that it
    did, and returns the new id; with ``recreate`` false, raises
    :class:`VCenterError`.
    """
    from pyVmomi import pbm, vmodl

    spec = pbm.profile.CapabilityBasedProfileUpdateSpec(description=description, constraints=build_constraints(rules))
    try:
        pm.PbmUpdate(profileId=pbm.profile.ProfileId(uniqueId=policy_id), updateSpec=spec)
        return policy_id
    except (vmodl.fault.MethodNotFound, vmodl.fault.NotSupported, vmodl.fault.NotImplemented):
        if not recreate:
            raise VCenterError(
                f"storage policy {name!r}: the server cannot update a policy in place (PbmUpdate not served)"
            ) from None
    delete_policy(pm, policy_id)
    new_id = create_policy(pm, name, description, rules)
    logger.warning(
        "storage policy %r: the server cannot update a policy in place (PbmUpdate not served); "
        "deleted %s and re-created it as %s",
        name,
        policy_id,
        new_id,
    )
    return new_id


class VsanStoragePolicyProvider(VCenterProvider):
    """Creates, adopts, updates and deletes one vSAN storage policy.

    Properties: ``policy_name``, ``description``, ``rules`` plus the connection
    (:data:`~.session.CONNECTION_KEYS`); outputs add ``policy_id`` (the resource id)
    and ``adopted``.
    """

    def _outs(self, props: Mapping[str, Any], policy_id: str, rules: Rules, adopted: bool) -> dict[str, Any]:
        outs = self.stored(props)
        outs.update(
            policy_name=props["policy_name"],
            description=props.get("description") or "",
            rules=rules,
            policy_id=policy_id,
            adopted=adopted,
        )
        return outs

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        rules = news.get("rules")
        if not isinstance(rules, Mapping) or is_unknown(rules):
            return dyn.CheckResult(news, [])  # not known yet (preview)
        try:
            validate_rules(rules, news.get("policy_name", ""))
        except ValueError as exc:
            return dyn.CheckResult(news, [dyn.CheckFailure("rules", str(exc))])
        return dyn.CheckResult(news, [])

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        conn = self.connection(props)
        name = props["policy_name"]
        rules = validate_rules(props["rules"], name)
        with vcenter(conn, f"creating storage policy {name!r}") as si:
            pm = profile_manager(si)
            existing = find_policies(pm, name)
            for policy in existing:
                if policy.rules == rules:
                    logger.info(
                        "storage policy %r exists with the same rules (%s): adopting it", name, policy.policy_id
                    )
                    return dyn.CreateResult(policy.policy_id, self._outs(props, policy.policy_id, rules, True))
            if existing:
                differences = "; ".join(rule_differences(existing[0].rules, rules))
                raise StoragePolicyConflict(
                    f"storage policy {name!r} already exists on {conn.server} ({existing[0].policy_id}) "
                    f"with different rules: {differences}. Change it in vCenter, delete it, or pick another name."
                )
            policy_id = create_policy(pm, name, props.get("description") or "", rules)
            logger.info("created storage policy %r (%s)", name, policy_id)
        return dyn.CreateResult(policy_id, self._outs(props, policy_id, rules, False))

    def read(self, id_: str, props: dict[str, Any]) -> dyn.ReadResult:
        conn = self.connection(props)
        policy_id = props.get("policy_id") or id_
        with vcenter(conn, f"reading storage policy {policy_id}") as si:
            policy = read_policy(profile_manager(si), policy_id)
        if policy is None:
            return dyn.ReadResult("", {})
        outs = self._outs(props, policy_id, policy.rules, bool(props.get("adopted")))
        outs.update(policy_name=policy.name, description=policy.description)
        return dyn.ReadResult(id_, outs)

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        def normalize(key: str, value: Any) -> Any:
            if key == "rules" and isinstance(value, Mapping):
                return {k: int(v) if isinstance(v, float) else v for k, v in value.items()}
            if key == "description":
                return value or ""
            return value

        replaces = changed_keys(olds, news, ["policy_name"])
        changes = changed_keys(olds, news, ["description", "rules"], normalize)
        return self.diff_result(olds, news, replaces, changes, delete_before_replace=False)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        conn = self.connection(news)
        name = news["policy_name"]
        rules = validate_rules(news["rules"], name)
        adopted = bool(olds.get("adopted"))
        description = news.get("description") or ""
        policy_id = olds.get("policy_id") or id_
        if olds.get("rules") == rules and (olds.get("description") or "") == description:
            logger.info("storage policy %r: only the connection changed; nothing to do on vCenter", name)
            return dyn.UpdateResult(self._outs(news, policy_id, rules, adopted))
        with vcenter(conn, f"updating storage policy {name!r}") as si:
            pm = profile_manager(si)
            if adopted:
                logger.info("storage policy %r was adopted: updating it in place", name)
                try:
                    update_policy(pm, policy_id, name, description, rules, recreate=False)
                except VCenterError as exc:
                    raise VCenterError(
                        f"{exc}; it was adopted, not created by this stack, so it is not re-created: "
                        "change its rules in vCenter instead"
                    ) from None
            else:
                policy_id = update_policy(pm, policy_id, name, description, rules)
        # A new id (the delete+create fallback) is an output change, not a new resource id.
        return dyn.UpdateResult(self._outs(news, policy_id, rules, adopted))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        name = props.get("policy_name")
        policy_id = props.get("policy_id") or id_
        if self.leaves_adopted(props, f"storage policy {name!r} ({policy_id})"):
            return
        conn = self.connection(props)
        with vcenter(conn, f"deleting storage policy {name!r}") as si:
            pm = profile_manager(si)
            if read_policy(pm, policy_id) is None:
                logger.info("storage policy %r (%s) is already gone", name, policy_id)
                return
            delete_policy(pm, policy_id)
            logger.info("deleted storage policy %r (%s)", name, policy_id)


class VsanStoragePolicy(VCenterResource, module="vsphere", name="VsanStoragePolicy"):
    """A vSAN storage policy (SPBM capability profile), adopted when it already exists.

    Outputs ``policy_id`` (what a namespace's ``storage_specs[].policy`` takes),
    ``policy_name``, ``rules`` and ``adopted``.
    """

    policy_id: pulumi.Output[str]
    policy_name: pulumi.Output[str]
    rules: pulumi.Output[dict[str, Any]]
    adopted: pulumi.Output[bool]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, policy_name: pulumi.Input[str],
                 description: pulumi.Input[str] = "", rules: pulumi.Input[Mapping[str, Any]],
                 vcenter: VCenterAccess) -> None:
        if isinstance(rules, Mapping) and not any(isinstance(v, pulumi.Output) for v in rules.values()):
            validate_rules(rules, policy_name if isinstance(policy_name, str) else "")  # fail at construction
        props = {
            "policy_name": policy_name,
            "description": description,
            "rules": rules,
            "policy_id": None,
            "adopted": None,
        }
        super().__init__(VsanStoragePolicyProvider(), name, opts, props, vcenter)
