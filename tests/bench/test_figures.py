"""The figure arithmetic: paired ratios, medians, goals, verdicts, the JSON shape and the table."""
from __future__ import annotations

import math

import pytest

from bench.figures import Check, Figure, Goal, Measurement, median_ratio, paired_ratios, render


def figure(num, den, goal=">= 0.85", checks=()):
    return Figure("f", "a figure", Goal.parse(goal), Measurement("a", "img/s", list(num)),
                  Measurement("b", "img/s", list(den)) if den is not None else None, list(checks))


def test_paired_ratios_divide_each_repetition_and_skip_zero_denominators():
    assert paired_ratios([10, 20, 30], [5, 0, 10]) == [2.0, 3.0]
    assert paired_ratios([1, 2], [1]) == [1.0]


def test_value_is_the_median_of_the_paired_ratios_not_the_ratio_of_medians():
    fig = figure([10, 30, 20], [10, 10, 40])  # ratios 1, 3, 0.5
    assert fig.ratios == [1.0, 3.0, 0.5]
    assert fig.value == 1.0
    assert fig.numerator.value == 20 and fig.denominator.value == 10
    assert fig.as_dict()["ratio_of_medians"] == 2.0
    assert median_ratio([], []) is None


def test_goal_parse_and_direction():
    assert Goal.parse(">= 0.85") == Goal(">=", 0.85)
    assert Goal.parse("<= 1.25").holds(1.25) is True
    assert Goal.parse("<= 1.25").holds(1.3) is False
    assert Goal.parse(">= 1.8").holds(1.79) is False
    assert Goal(">=", 1).holds(None) is None
    assert Goal(">=", 1).holds(math.nan) is None
    with pytest.raises(ValueError, match="goal op"):
        Goal("==", 1)


def test_holds_is_none_until_measured_and_false_when_missed():
    assert figure([], []).holds is None
    assert figure([9, 9], [10, 10]).holds is True
    assert figure([8, 8], [10, 10]).holds is False
    errored = figure([9], [10])
    errored.error = "RuntimeError: boom"
    assert errored.holds is None


def test_a_failed_check_fails_the_figure_even_when_the_ratio_holds():
    agreement = Check("top1_agreement_with_fp32", 0.97, Goal(">=", 0.99))
    fig = figure([30], [10], ">= 2.5", [agreement])
    assert fig.goal.holds(fig.value) is True
    assert fig.holds is False
    assert figure([30], [10], ">= 2.5", [Check("x", None, Goal(">=", 0.99))]).holds is None


def test_absolute_figure_has_no_denominator():
    fig = figure([4000, 6000, 5500], None, ">= 5000")
    assert fig.value == 5500 and fig.holds is True
    record = fig.as_dict()
    assert record["denominator"] is None and record["ratio_of_medians"] is None


def test_record_carries_both_measurements_with_name_value_unit():
    record = figure([9, 11], [10, 10]).as_dict()
    for key in ("name", "value", "goal", "holds", "numerator", "denominator", "ratios", "checks", "notes", "error"):
        assert key in record
    assert record["goal"] == ">= 0.85"
    assert record["numerator"] == {"name": "a", "value": 10.0, "unit": "img/s", "samples": [9.0, 11.0]}
    assert record["denominator"]["name"] == "b" and record["denominator"]["unit"] == "img/s"


def test_render_shows_missed_goals_and_unmeasured_figures():
    held, missed, broken = figure([9], [10]), figure([5], [10]), figure([], [])
    held.name, missed.name, broken.name = "held", "missed", "broken"
    broken.error = "ValueError: no data"
    text = render([held, missed, broken])
    assert "MISSED" in text and "not measured" in text and "error: ValueError: no data" in text
    assert text.splitlines()[-1] == "1 of 3 goals hold; MISSED: missed; not measured: broken"
