"""The workload runner: the paper's two benchmarks, run on a Dask cluster.

Never imports pulumi: the only thing that crosses from the infrastructure is the
stack-output contract (``workloads/contract.py``).
"""
