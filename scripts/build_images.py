#!/usr/bin/env python3
"""Build the container images the real-cluster tests run, as OCI archives, without a registry.

No registry is reachable from these machines, so the images are written here, by hand,
in the OCI image layout (image-spec v1.0: ``oci-layout``, ``index.json``, content-addressed
``blobs/sha256/...``; one gzip layer, an image config, a manifest) and packed as one tar
that ``ctr -n k8s.io images import`` loads into containerd.

  pause         the pod sandbox: ``images/pause/pause.c`` built with ``gcc -static``;
                the image holds that one file.
  dask-runtime  a minimal Debian bookworm rootfs (debootstrap) for the Dask pods; the
                Python environment is mounted read-only from the node (see below).

Each archive is cached under ``$DASK_TKG__CACHE/images`` by the hash of what went into it
(the source file, the compiler's version, this script), so a cached run only hashes.

Usage: scripts/build_images.py [pause ...]   (no names: all). Prints one JSON line per image:
{"name": ..., "ref": ..., "archive": ..., "cached": ...}.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAUSE_SOURCE = REPO / "images" / "pause" / "pause.c"
REGISTRY = "dtkg.local"  # never resolved: images are imported, never pulled
RECIPE = "2"


def cache_root() -> Path:
    root = os.environ.get("DASK_TKG__CACHE") or os.environ.get("DASK_TKG_CACHE") or "~/.cache/dask-tkg"
    return Path(root).expanduser() / "images"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def layer_from_files(files: dict[str, tuple[bytes, int]]) -> bytes:
    """An uncompressed layer tar of ``{path: (content, mode)}``, byte-for-byte reproducible."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, (content, mode) in sorted(files.items()):
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(content), mode, 0
            info.uid = info.gid = 0
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def write_oci_archive(archive: Path, ref: str, layers: list[bytes], config: dict) -> None:
    """Write an OCI image layout holding one image (``layers`` uncompressed, bottom first) as a tar.

    The index names the image twice, because importers read different annotations:
    ``org.opencontainers.image.ref.name`` (image-spec annotations.md) and
    ``io.containerd.image.name`` (what ``ctr images import`` names the image by).
    """
    blobs: dict[str, bytes] = {}

    def add(data: bytes, media_type: str) -> dict:
        digest = _sha256(data)
        blobs[digest] = data
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}

    layer_descriptors = []
    diff_ids = []
    for layer in layers:
        diff_ids.append(f"sha256:{_sha256(layer)}")
        compressed = gzip.compress(layer, compresslevel=6, mtime=0)
        layer_descriptors.append(add(compressed, "application/vnd.oci.image.layer.v1.tar+gzip"))
    image_config = {"architecture": "amd64", "os": "linux", "config": config,
                    "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    config_descriptor = add(json.dumps(image_config, sort_keys=True).encode(),
                            "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_descriptor, "layers": layer_descriptors}
    manifest_descriptor = add(json.dumps(manifest, sort_keys=True).encode(),
                              "application/vnd.oci.image.manifest.v1+json")
    manifest_descriptor["platform"] = {"architecture": "amd64", "os": "linux"}
    manifest_descriptor["annotations"] = {"io.containerd.image.name": ref,
                                          "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1]}
    index = {"schemaVersion": 2, "manifests": [manifest_descriptor]}
    entries = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
               "index.json": json.dumps(index, sort_keys=True).encode()}
    entries.update({f"blobs/sha256/{digest}": data for digest, data in blobs.items()})
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=archive.parent, delete=False) as tmp:
        tmp.write(layer_from_files({name: (data, 0o644) for name, data in entries.items()}))
    os.replace(tmp.name, archive)


def _compiler_version() -> str:
    return subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]


def build_pause() -> dict:
    """The pause image: a static binary at /pause, its entrypoint."""
    key = _sha256(b"\0".join([RECIPE.encode(), PAUSE_SOURCE.read_bytes(), _compiler_version().encode(),
                              Path(__file__).read_bytes()]))[:16]
    ref = f"{REGISTRY}/pause:{key}"
    archive = cache_root() / f"pause-{key}.oci.tar"
    result = {"name": "pause", "ref": ref, "archive": str(archive), "cached": archive.is_file()}
    if archive.is_file():
        return result
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "pause"
        subprocess.run(["gcc", "-static", "-O2", "-s", "-o", str(binary), str(PAUSE_SOURCE)], check=True)
        layer = layer_from_files({"pause": (binary.read_bytes(), 0o755)})
    write_oci_archive(archive, ref, [layer], {"Entrypoint": ["/pause"], "User": "65535:65535"})
    result["build_s"] = round(time.monotonic() - started, 1)
    return result


# The Dask runtime stand-in: a Debian bookworm rootfs (debootstrap --variant=minbase from
# Debian's mirror) with the shared libraries CPython 3.11 and the project's wheels load, and
# no Python of its own: the tests mount the prepared environment (the base interpreter's
# prefix and the project's virtual environment) read-only from the node, at the same paths,
# because the torch wheel installed here is a ~5 GB CUDA build (too big for a CI image).
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
RUNTIME_PACKAGES = ("ca-certificates", "libssl3", "libffi8", "zlib1g", "libbz2-1.0", "liblzma5", "libsqlite3-0",
                    "libreadline8", "libncursesw6", "libuuid1", "libgdbm6", "libexpat1", "libgomp1",
                    "libtcmalloc-minimal4", "procps", "iproute2", "netcat-openbsd")


def _rootfs_layer(root: Path) -> bytes:
    """The rootfs as one layer tar (numeric owners, device nodes left out: runc makes /dev)."""
    result = subprocess.run(["tar", "--numeric-owner", "--exclude=./dev/*", "--exclude=./proc/*",
                             "--exclude=./sys/*", "--exclude=./var/cache/apt/archives/*.deb",
                             "-C", str(root), "-cf", "-", "."], capture_output=True, check=True)
    return result.stdout


def _users_like_the_images(root: Path) -> None:
    """The users the Dask pods run as (components/facts/dask_facts.py): the RAPIDS images' ``rapids``
    (uid 1001, group ``conda`` gid 1000, home /home/rapids) and, for images that run as root,
    RUN_AS (1000:1000, whose home the pods mount themselves). ``/root`` is made traversable
    (0711): the tests mount the node's interpreter under /root at the same path, which a
    non-root user could not reach through Debian's 0700 /root."""
    with open(root / "etc" / "group", "a") as group:
        group.write("conda:x:1000:\n")
    with open(root / "etc" / "passwd", "a") as passwd:
        passwd.write("rapids:x:1001:1000::/home/rapids:/bin/bash\ndask:x:1000:1000::/home/dask:/bin/bash\n")
    home = root / "home" / "rapids"
    home.mkdir(parents=True)
    os.chown(home, 1001, 1000)
    os.chmod(root / "root", 0o711)


def build_dask_runtime() -> dict:
    key = _sha256("\0".join([RECIPE, DEBIAN_SUITE, DEBIAN_MIRROR, *RUNTIME_PACKAGES]).encode()
                  + Path(__file__).read_bytes())[:16]
    ref = f"{REGISTRY}/dask-runtime-base:{key}"
    archive = cache_root() / f"dask-runtime-base-{key}.oci.tar"
    result = {"name": "dask-runtime", "ref": ref, "archive": str(archive), "cached": archive.is_file()}
    if archive.is_file():
        return result
    started = time.monotonic()
    work = cache_root() / f"work-dask-runtime-{key}"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    try:
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(RUNTIME_PACKAGES)}",
                        DEBIAN_SUITE, str(work / "root"), DEBIAN_MIRROR],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        _users_like_the_images(work / "root")
        layer = _rootfs_layer(work / "root")
        write_oci_archive(archive, ref, [layer], {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                                                  "WorkingDir": "/"})
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    result["build_s"] = round(time.monotonic() - started, 1)
    return result


BUILDERS = {"pause": build_pause, "dask-runtime": build_dask_runtime}


def main(argv: list[str]) -> int:
    names = argv or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        print(f"build_images: unknown image(s) {unknown}; known: {sorted(BUILDERS)}", file=sys.stderr)
        return 2
    for name in names:
        print(json.dumps(BUILDERS[name]()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
