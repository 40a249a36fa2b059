"""One preview names every mistake: a refused value does not hide what the cross-field rules
find on the other parts, and a rule that reads a part holding a refused value waits for its
fix rather than judging a value that is not the stack's (``components/settings/soundness.py``)."""
from __future__ import annotations

import pytest

from components.settings.errors import Problem
from components.settings.soundness import Unsound, UnsoundPart, judged
from tests.unit.support import PROVIDER, problems

GPU_CLASS = "16cpu-64gram-ts-20c-vmxnet3"


def test_a_refused_value_and_the_settings_rules_require_are_named_together():
    """datasetPvcSize is refused as it is read; vsphere:vsphereServer and ngcApiKey are required
    by rules over the other parts: before, the second pair surfaced only on the next preview."""
    error = problems(provider={k: v for k, v in PROVIDER.items() if k != "vsphere:vsphereServer"},
                     datasetPvcSize="lots", ngcApiKey=None)
    keys = [p.key for p in error.problems]
    assert keys == ["datasetPvcSize", "vsphere:vsphereServer", "ngcApiKey"], error


def test_a_rule_reading_a_refused_part_waits_instead_of_guessing():
    """A GPU class with a refused field leaves the VM classes without it: the pools that name
    it are not called "not offered" (the rule waits), while a rule over sound parts still speaks."""
    bad_class = f"name={GPU_CLASS},cpus=999,memoryMb=65536,memoryReservation=100,vgpuProfile=grid_a100-20c"
    error = problems(vmClasses=[bad_class], supervisorServer=None)
    keys = [p.key for p in error.problems]
    assert "vmClasses[0].cpus" in keys and "supervisorServer" in keys, error
    assert not [k for k in keys if k.startswith(("nodePools", "controlPlaneVmClass", "gpuWorkers"))], error


def test_a_stand_in_stops_every_use_of_the_part():
    part = Unsound("cluster")
    for use in (lambda: part.node_pools, lambda: list(part), lambda: bool(part), lambda: part == (),
                lambda: len(part), lambda: "x" in part):
        with pytest.raises(UnsoundPart, match="the settings' cluster hold a refused value"):
            use()
    sound = Problem("tkr", "a rule over sound parts")
    assert judged((lambda s: s.node_pools, lambda s: [sound]), part) == ([sound], 1)
