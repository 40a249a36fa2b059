"""The Dask release: scheduler, GPU workers and Jupyter, with TLS and controlled exposure."""
