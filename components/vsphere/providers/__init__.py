"""Pulumi dynamic providers for what pulumi-vsphere 4.18 cannot express.

- ``spbm.VsanStoragePolicy``: vSAN storage policies (RAID level, stripe width) via SPBM.
- ``namespace_rest.SupervisorNamespace``: a vSphere 7 Supervisor namespace via the
  vCenter REST API (pulumi-vsphere's ``Namespace`` needs vSphere 8).
- ``namespace_access.NamespaceAccessAndLimits``: the access list and storage limits of a
  vSphere 8/9 namespace, which pulumi-vsphere's ``Namespace`` has no arguments for.
- ``supervisor_library``: the check that the Supervisor's TKR/VKr library holds ``tkr``
  (``SupervisorTkrLibrary`` on vSphere 7, ``SupervisorReleaseLibrary`` on 8 and 9).
- ``file_share.VsanFileShare``: a vSAN file-service NFS share.
- ``privileges.VCenterPrivileges``: the check that the vCenter account holds what the program needs.
- ``base``: what every resource and provider here shares (one ``vcenter`` argument, the password
  secret, the connection stored for later calls, validation at check, reconnect in diff).
- ``session``: the vCenter connection they share (SOAP, SPBM, vSAN and REST).
- ``namespace_entries``: the access and storage entries both namespace resources merge.
"""
