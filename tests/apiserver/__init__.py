"""Tests against a real Kubernetes 1.20 API server (etcd + kube-apiserver built from Debian's source)."""
