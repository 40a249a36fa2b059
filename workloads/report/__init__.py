"""Reports from ``results.jsonl``: PNG figures and one self-contained ``report.html``.

``dask-tkg report [RESULTS_DIR] [--compare OTHER_DIR] [--output DIR]``, or
:func:`render` from code. Matplotlib is imported only when a report is rendered.
"""
from __future__ import annotations

from typing import Any

from .runs import NoResults

__all__ = ["NoResults", "render"]


def render(*args: Any, **kwargs: Any):
    """Render the report; see :func:`workloads.report.build.render` for the parameters."""
    from .build import render as _render

    return _render(*args, **kwargs)
