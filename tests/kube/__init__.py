"""The Kubernetes stand-ins the tests run against (1.33 for the current stacks, 1.20 for the
paper's), one concern a module.

- :mod:`tests.kube.binaries`: the two builds, which one a stack runs on, building them when missing.
- :mod:`tests.kube.versions`: the versions in pytest's header, recorded per test, summed up per version.
- :mod:`tests.kube.pki`: throw-away certificate authorities, certificates and service-account keys.
- :mod:`tests.kube.processes`: child processes that die with pytest, free ports, waiting on HTTP.
- :mod:`tests.kube.rest`: the REST client (``apply_manifest``, ``api_request``, ... and :class:`KubeApiError`).
- :mod:`tests.kube.crds`: the pinned CRDs (TanzuKubernetesCluster, Cluster API), read and installed.
- :mod:`tests.kube.apiserver`: etcd + kube-apiserver started together (:class:`KubeAPIServer`).
- :mod:`tests.kube.fixtures`: the pytest fixtures and collection hooks over them, which a folder's
  ``conftest.py`` imports by name to register them.
"""
