"""The current stacks' real kube-apiserver (1.33, tests/apiserver) for the operator tests, with the
pinned operator chart's CRDs installed (``operator_crds``). The modules that use it carry the
``apiserver`` mark themselves; the build hooks stay with tests/apiserver (imported once, not
run twice)."""
from tests.kube.fixtures import kube_apiserver, kube_namespace, operator_crds  # noqa: F401 - fixtures reused
