"""Upstream facts the program and its checks rely on, each with its source at the pinned version:
the add-ons' (GPU operator, vGPU drivers, CSI), NVIDIA's and VMware's support matrices, the Dask
chart's and operator's, the Dask images', the ClusterClass variables, the network endpoints of
the upstream registries. Facts only: no settings are read here (``components/settings`` checks
the stack's settings against them). Standard library and ``components.artifacts`` only."""
