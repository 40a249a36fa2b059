"""Pulumi dynamic providers for what the Supervisor's Kubernetes API holds but no Pulumi
resource waits for.

- ``pool_readiness.GpuPoolsReady``: ``pulumi up`` waits until the Cluster API
  MachineDeployments of the cluster's GPU pools have all their replicas ready.
- ``supervisor_releases.SupervisorReleases``: ``pulumi preview`` checks that the Supervisor
  serves the Cluster's ClusterClass, release and OS images.
- ``kube_api``: a ``requests`` session for a Kubernetes API server, built from a kubeconfig.
"""
