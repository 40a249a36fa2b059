"""The deploy graph: settings -> vSphere layer -> cluster -> add-ons -> Dask."""
