"""Entry point of the policy pack: the Pulumi CLI runs this directory
(``pulumi preview --policy-pack policy``), with the directory itself on ``sys.path``.

Building ``PolicyPack`` starts the analyzer's gRPC server and blocks until the CLI is done,
so nothing else may import this module: tests import ``policy.rules``.
"""
from pulumi_policy import EnforcementLevel, PolicyPack
from rules import PACK_NAME, POLICIES

PolicyPack(
    name=PACK_NAME,
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)
