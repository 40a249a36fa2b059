"""Scoring: the paper's breed-substring rule, and exact top-1/top-5 by class index.

* The paper's rule (``correct``/``accuracy``): the true breed is the folder name after the wnid,
  underscores as spaces; a prediction counts when the breed occurs, case-insensitively,
  as a substring of the top-1 class name (the labels file's full name where present,
  e.g. ``Maltese dog, Maltese terrier, Maltese``). Denominator: the images that decoded.
* Exact (``top1_exact``/``top5_exact``): where the folder's wnid has a known ImageNet index
  (``wnids.txt`` or the built-in dog table), the predicted indices are compared with it;
  the denominator (``exact_scored``) is the decoded images with a known index.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from workloads.images.dataset import breed_of, wnid_of


@dataclass
class Score:
    scored: int = 0
    correct: int = 0
    exact_scored: int = 0
    top1: int = 0
    top5: int = 0
    per_breed: dict[str, list[int]] = field(default_factory=dict)  # breed -> [correct, scored]

    def add(self, name: str, top: Sequence[int], labels: Sequence[str], wnid_index: Mapping[str, int]) -> None:
        folder = name.split("/", 1)[0]
        breed = breed_of(folder)
        hit = seed_correct(breed, labels[top[0]])
        self.scored += 1
        self.correct += hit
        counts = self.per_breed.setdefault(breed, [0, 0])
        counts[0] += hit
        counts[1] += 1
        wnid = wnid_of(folder)
        if wnid is not None and wnid in wnid_index:
            truth = wnid_index[wnid]
            self.exact_scored += 1
            self.top1 += top[0] == truth
            self.top5 += truth in top[:5]

    def metrics(self, meaningful: bool) -> dict[str, object]:
        """Counts always; rates only when the weights make them ``meaningful``."""
        def rate(numerator: int, denominator: int) -> float | None:
            return round(numerator / denominator, 6) if meaningful and denominator else None

        return {
            "correct": self.correct,
            "accuracy": rate(self.correct, self.scored),
            "exact_scored": self.exact_scored,
            "top1_exact": rate(self.top1, self.exact_scored),
            "top5_exact": rate(self.top5, self.exact_scored),
        }


def seed_correct(breed: str, label: str) -> bool:
    """The paper's rule: ``breed`` (underscores as spaces) is a substring of ``label``."""
    return breed.replace("_", " ").lower() in label.lower()


def score(predictions: Iterable[tuple[str, Sequence[int]]], labels: Sequence[str],
          wnid_index: Mapping[str, int]) -> Score:
    """Score ``(file, top-k indices)`` pairs; files are ``<wnid>-<breed>/<name>``."""
    result = Score()
    for name, top in predictions:
        result.add(name, top, labels, wnid_index)
    return result
