"""The Dask image stand-in (scripts/build_images.py) holds the users the program runs the Dask
pods as (components/facts/dask_facts.py): a change of either side without the other fails here."""
from __future__ import annotations

import importlib.util

import components.facts.dask_facts as facts
from tests.setup.programs import REPO


def test_the_stand_in_has_the_users_the_pods_run_as(tmp_path):
    spec = importlib.util.spec_from_file_location("build_images", REPO / "scripts" / "build_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = tmp_path / "root"
    for folder in ("etc", "root", "home"):
        (root / folder).mkdir(parents=True)
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc" / "group").write_text("root:x:0:\n")
    module._users_like_the_images(root)
    users = {int(f[2]): (int(f[3]), f[5])
             for f in (line.split(":") for line in (root / "etc" / "passwd").read_text().splitlines())}
    groups = {int(line.split(":")[2]) for line in (root / "etc" / "group").read_text().splitlines()}
    default = facts.pod_user("rapidsai/notebooks:26.10-cuda12-py3.11")
    assert users[default.uid] == (default.gid, default.home) and default.gid in groups
    assert (root / default.home.lstrip("/")).stat().st_uid == default.uid
    assert users[facts.RUN_AS[0]] == (facts.RUN_AS[1], facts.RUN_AS_HOME) and facts.RUN_AS[1] in groups
    assert (root / "root").stat().st_mode & 0o111 == 0o111  # the mounted interpreter under /root is reachable
