"""The guest cluster layer: the TanzuKubernetesCluster and what it needs."""
