"""Pulumi dynamic providers for what pulumi-vsphere 4.18 cannot express on vSphere 7.

- ``spbm.VsanStoragePolicy``: vSAN storage policies (RAID level, stripe width) via SPBM.
- ``namespace_rest.SupervisorNamespace``: a vSphere 7 Supervisor namespace via the
  vCenter REST API (pulumi-vsphere's ``Namespace`` needs vSphere 8).
- ``file_share.VsanFileShare``: a vSAN file-service NFS share.
- ``session``: the vCenter connection they share (SOAP, SPBM, vSAN and REST).
"""
