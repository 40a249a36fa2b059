"""The program, the runner and the benchmark suite stay easy to change: no function or method in
``components/``, ``workloads/`` or ``bench/`` is longer than about 80 lines (``scripts/longest_functions.py``
lists the longest)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 80


def _longest_functions():
    spec = importlib.util.spec_from_file_location("longest_functions", REPO / "scripts" / "longest_functions.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["longest_functions"] = module
    spec.loader.exec_module(module)
    return module


def test_no_function_in_components_workloads_or_bench_is_over_the_limit():
    shape = _longest_functions()
    too_long = [(length, f"{path.relative_to(REPO)}:{line}", name)
                for folder in ("components", "workloads", "bench") for path in sorted((REPO / folder).rglob("*.py"))
                for length, name, line in shape.functions(path) if length > LIMIT]
    assert too_long == [], f"longer than {LIMIT} lines: {too_long}"


def test_the_listing_counts_a_function_from_def_to_its_last_line(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("class A:\n    def f(self):\n" + "        x = 1\n" * 5 + "\n\ndef g():\n    return 1\n")
    assert sorted(_longest_functions().functions(source)) == [(2, "g", 10), (6, "A.f", 2)]
