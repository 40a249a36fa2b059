"""A run and its record: the registry of benchmarks, the record each run appends to
``results.jsonl`` and the table printed at the end."""
