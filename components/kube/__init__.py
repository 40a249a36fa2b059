"""The Kubernetes object builders several layers share: the pods' hardening and the namespaces'
pod security, the NetworkPolicies and their semantics, the guarded exposure of Services, and the
prepared environment's pod fragments. Below the resources (vSphere, cluster, add-ons, Dask), which
all build pods or namespaces with them; above the settings they read."""
