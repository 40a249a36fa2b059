"""vSAN storage-policy rules as SPBM capabilities (namespace ``VSAN``): the ids, the
types SPBM expects, and what each allows. Facts from the SPBM API (pyVmomi 9.1.1,
``pbm.capability``)."""
from __future__ import annotations

from typing import Any

import components.settings.records as records

RAID1 = "RAID-1 (Mirroring) - Performance"
RAID56 = "RAID-5/6 (Erasure Coding) - Capacity"

F = records.Field

# Every rule is optional; a policy sets the ones it needs. Short forms RAID-1 / RAID-5/6
# are accepted for replicaPreference and stored as SPBM's full strings.
VSAN_RULE_FIELDS: dict[str, records.Field] = {
    "hostFailuresToTolerate": F(records.integer(0, 3), required=False),
    "replicaPreference": F(
        records.choice(RAID1, RAID56,
                       aliases={"RAID-1": RAID1, "RAID-5": RAID56, "RAID-6": RAID56, "RAID-5/6": RAID56}),
        required=False,
    ),
    "stripeWidth": F(records.integer(1, 12), required=False),
    "proportionalCapacity": F(records.integer(0, 100), required=False),
    "cacheReservation": F(records.integer(0, 1_000_000), required=False),
    "checksumDisabled": F(records.boolean, required=False),
    "forceProvisioning": F(records.boolean, required=False),
    "iopsLimit": F(records.integer(0), required=False),
    "subFailuresToTolerate": F(records.integer(0, 3), required=False),
}


def rule_problems(rules: dict[str, Any]) -> list[str]:
    """Combinations vSAN refuses: erasure coding tolerates 1 (RAID-5) or 2 (RAID-6)
    host failures only."""
    problems = []
    if rules.get("replicaPreference") == RAID56 and rules.get("hostFailuresToTolerate", 1) not in (1, 2):
        problems.append("RAID-5/6 erasure coding needs hostFailuresToTolerate 1 (RAID-5) or 2 (RAID-6)")
    return problems
