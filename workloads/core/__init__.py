"""What every command shares: logging and ``--help`` names, the project's Dask config keys
and the runner's error types."""
