"""Where the Dask cluster is and how a run holds it: the endpoint from stack outputs or an
address, the local cluster of the embedded default, the session that connects, scales and
watches it, the preflight of its workers, the port-forward to a ClusterIP scheduler and
the stop signals that end a run."""
