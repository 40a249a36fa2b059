"""The paper's substring rule and exact top-1/top-5 by class index."""
from __future__ import annotations

from workloads.images import scoring

LABELS = ["tench", "Maltese dog, Maltese terrier, Maltese", "Shih-Tzu", "toy terrier", "Chihuahua"]
INDEX = {"n02085936": 1, "n02086240": 2, "n02085620": 4}


def test_seed_rule_is_a_case_insensitive_substring_with_underscores_as_spaces():
    assert scoring.seed_correct("Maltese_dog", "Maltese dog, Maltese terrier, Maltese")
    assert scoring.seed_correct("shih-tzu", "Shih-Tzu")
    assert scoring.seed_correct("terrier", "toy terrier")  # the paper's rule is that loose
    assert not scoring.seed_correct("toy_terrier", "Maltese dog, Maltese terrier, Maltese")


def test_counts_and_rates():
    predictions = [
        ("n02085936-Maltese_dog/a.jpg", [1, 0, 2, 3, 4]),  # seed yes, top1 yes
        ("n02085936-Maltese_dog/b.jpg", [3, 1, 0, 2, 4]),  # seed no, top5 yes
        ("n02086240-Shih-Tzu/c.jpg", [0, 3, 1, 4, 2]),  # seed no, top5 yes (5th)
        ("n02085620-Chihuahua/d.jpg", [0, 1, 2, 3, 3]),  # seed no, top5 no
        ("n09999999-toy_terrier/e.jpg", [3, 0, 0, 0, 0]),  # seed yes; wnid unknown: not exact-scored
    ]
    result = scoring.score(predictions, LABELS, INDEX)
    assert result.metrics(meaningful=True) == {
        "correct": 2, "accuracy": 0.4, "exact_scored": 4, "top1_exact": 0.25, "top5_exact": 0.75}
    assert result.per_breed["Maltese dog"] == [1, 2]
    assert result.metrics(meaningful=False) == {
        "correct": 2, "accuracy": None, "exact_scored": 4, "top1_exact": None, "top5_exact": None}
    assert scoring.score([], LABELS, INDEX).metrics(True)["accuracy"] is None
