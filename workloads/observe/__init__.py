"""What is observed while a run goes on: the environment for the record, Dask's
performance report, per-worker utilization and the progress bar."""
