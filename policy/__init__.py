"""The dask-tkg policy pack (``pulumi preview --policy-pack policy``).

The rules live in ``policy.rules`` and import without side effects; only the pack's entry
point, ``__main__.py``, builds the ``PolicyPack`` (which starts a gRPC server and blocks).
"""
