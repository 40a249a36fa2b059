"""Benchmark 2: NYC-taxi fare regression (XGBoost + Dask, dask.dataframe or dask_cudf)."""
