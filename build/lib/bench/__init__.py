"""The benchmark suite: each workload measured against its physical limit in the same run
(``python -m bench``; see :mod:`bench.cli` and :mod:`bench.figures`)."""
