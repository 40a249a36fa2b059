"""Benchmark 1: image-classification inference (PyTorch + Dask) over the Stanford Dogs layout."""
