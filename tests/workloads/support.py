"""The generated tree's size and the synthetic colour model the workloads tests share."""
from __future__ import annotations

BREEDS, PER_BREED = 4, 5
COLOUR_MODEL = "workloads.images.synthetic:colour_classifier"
