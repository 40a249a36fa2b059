"""Generators of both datasets in their real on-disk layouts, with fixed seeds."""
