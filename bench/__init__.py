"""The benchmark suite: each workload measured against its physical limit in the same run
(``dask-tkg bench``; see :mod:`bench.cli` for the commands and :mod:`bench.registry` for
the figures)."""
