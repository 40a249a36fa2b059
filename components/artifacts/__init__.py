"""The pinned upstream artifacts, one home for their digests (``scripts/artifacts.toml``):
the chart archives every Helm release deploys, verified by sha256 before Helm sees them, and
the copies the tests render. Standard library only: ``scripts/fetch_artifacts.py`` runs it
before (and without) the project's virtual environment."""
