"""What the Dask pods' images and Dask itself really do, written down as data.

Each fact says the version it holds for and the source it was read from, so that a change of
image or Dask version makes the render tests name the fact to re-check instead of passing
on a guess. The values builder (``values.py``) and the render tests both read them.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from components.artifacts.images import ImageRef


@dataclass(frozen=True)
class ImageFacts:
    """How an image starts: its ENTRYPOINT and CMD, and what its entrypoint does first."""

    repository: str
    tag_prefix: str
    source: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    dask_version: str | None
    # The entrypoint starts ``jupyter-lab --allow-root --ip=0.0.0.0 --NotebookApp.token=''`` in
    # the background (no password, no token) unless this variable is one of ``truthy``.
    background_jupyter_unless: str | None = None
    truthy: tuple[str, ...] = ("true", "yes", "y")
    has_jupyter: bool = True
    # What a runner needs to know to drive it: the image's Python (major.minor), the user's
    # home (where pip keeps its cache: the pip-cache claim is mounted at <home>/.cache/pip),
    # the modules it already holds (import names), and the CUDA major it is built for.
    python: str | None = None
    home: str = "/root"
    # The image's own non-root user (uid, gid), which the pods run as; None: the image runs as
    # root, and the pods run as RUN_AS (pod_user).
    user: tuple[int, int] | None = None
    modules: frozenset[str] = frozenset()
    cuda_major: int | None = None

    def matches(self, image: str) -> bool:
        ref = ImageRef.parse(image)  # a digest after the tag names the same image's bytes
        return ref.repository == self.repository and (ref.tag or "").startswith(self.tag_prefix)


# The current platform's default with workerEnvironment=prepared: only the interpreter; every
# package comes from the prepared environment (components/kube/prepared_env.py), whose venv
# is made by this image's python. RAPIDS' pip wheels carry their CUDA libraries (the lock's
# CUDA 13 nvidia-* wheels) and need only the driver, which the GPU operator's container toolkit mounts.
PYTHON_SLIM_BOOKWORM = ImageFacts(
    repository="python",
    tag_prefix="3.11.15-slim-bookworm",
    source=("docker-library/python 3.11/slim-bookworm/Dockerfile (FROM debian:bookworm-slim; CPython 3.11.15"
            " built into /usr/local, ENV PATH /usr/local/bin:$PATH; no ENTRYPOINT; CMD [\"python3\"]; no USER:"
            " root, so the pods run as RUN_AS); glibc 2.36 (Debian 12), above the lock's manylinux_2_28"),
    entrypoint=(),
    cmd=("python3",),
    dask_version=None,  # the prepared environment's (daskImageDaskVersion, checked against the lock)
    has_jupyter=False,  # the prepared environment's
    python="3.11",
)
# The same image on Debian 13, the default since Debian 12's regular security support ended (June 2026)
PYTHON_SLIM_TRIXIE = dataclasses.replace(
    PYTHON_SLIM_BOOKWORM, tag_prefix="3.11.15-slim-trixie",
    source=("docker-library/repo-info repos/python/remote/3.11.15-slim-trixie.md at 2477d553 (linux/amd64: debian.sh"
            " trixie, PYTHON_VERSION 3.11.15 built into /usr/local, ENV PATH /usr/local/bin:...; no ENTRYPOINT; CMD"
            " [\"python3\"]; no USER: root, so the pods run as RUN_AS); glibc 2.41 (Debian 13), above the lock's"
            " manylinux_2_28"))

IMAGES: tuple[ImageFacts, ...] = (
    ImageFacts(
        repository="nvcr.io/nvidia/rapidsai/rapidsai",
        tag_prefix="21.10-",
        source=("rapidsai/docker branch-21.10: generated-dockerfiles/rapidsai_ubuntu20.04-runtime.amd64.Dockerfile"
                " (ENTRYPOINT, CMD), context/entrypoint.sh (sources /opt/docker/bin/entrypoint_source, then"
                " exec \"$@\"), context/source_entrypoints/runtime_devel.sh (DISABLE_JUPYTER, JUPYTER_FG),"
                " context/start-jupyter.sh (the jupyter-lab command line)"),
        entrypoint=("/opt/conda/bin/tini", "--", "/opt/docker/bin/entrypoint"),
        cmd=("/bin/bash",),
        dask_version="2021.09.1",
        background_jupyter_unless="DISABLE_JUPYTER",
        python="3.8",  # rapidsai/docker branch-21.10 settings.yaml: PYTHON_VER 3.7 and 3.8 (NGC's tag: 3.8)
        cuda_major=11,
        # Runs as root; its Dockerfile makes the conda environments writable by every user
        # (``chmod -R ugo+w /opt/conda ${RAPIDS_DIR}``), so EXTRA_PIP_PACKAGES installs as RUN_AS.
    ),
    ImageFacts(
        repository="nvcr.io/nvidia/rapidsai/base",
        tag_prefix="25.10-",
        source="rapidsai/docker branch-25.10: Dockerfile, target base (ENTRYPOINT, CMD); context/entrypoint.sh",
        entrypoint=("/home/rapids/entrypoint.sh",),
        cmd=("ipython",),
        dask_version=None,  # the image that builds on it pins its own (images/dask-runtime)
        has_jupyter=False,  # only the "notebooks" target installs JupyterLab
        home="/home/rapids",
        # branch-25.10 Dockerfile: ``useradd -rm -d /home/rapids -s /bin/bash -g conda -u 1001 rapids``,
        # ``USER rapids``; the group conda is gid 1000 (LABEL com.nvidia.workbench.user.gid) and
        # owns /opt/conda (``--chown=root:conda --chmod=770``): pip installs as that user.
        user=(1001, 1000),
    ),
    # The current platform's default: a published RAPIDS image the runner drives as it is
    # (the "notebooks" target: "base" plus JupyterLab, so one image serves every pod).
    ImageFacts(
        repository="rapidsai/notebooks",
        tag_prefix="26.10-cuda12-py3.11",
        source=("rapidsai/docker (main at ddc94029, RAPIDS_VER 26.10): Dockerfile targets base (USER rapids uid"
                " 1001, home /home/rapids; installs rapids=26.10, python=PYTHON_VER) and notebooks (adds"
                " jupyterlab=4, dask-labextension; ENTRYPOINT /home/rapids/entrypoint.sh; CMD sh -c jupyter-lab"
                " with an empty token), context/entrypoint.sh (pip install $EXTRA_PIP_PACKAGES, then exec"
                " \"$@\"), matrix.yaml (CUDA 12.9.1 / 13.3.0, Python 3.11-3.14), README (tags"
                " <RAPIDS>-cuda<major>-py<Python> from 25.12). Dask: rapids-dask-dependency 26.10.0's METADATA"
                " on PyPI (dask and distributed >=2026.7.1,<2026.7.2). Modules: rapidsai/integration"
                " conda/recipes/rapids/recipe.yaml (cudf, dask-cuda, rapids-xgboost: xgboost =3.2.0 in"
                " versions.yaml, at 875885e) and cudf's dependencies (pandas, pyarrow, numpy, cupy)"),
        entrypoint=("/home/rapids/entrypoint.sh",),
        cmd=("sh", "-c", "jupyter-lab --notebook-dir=/home/rapids/notebooks --ip=0.0.0.0 --no-browser"
                         " --NotebookApp.token='' --NotebookApp.allow_origin='*'"
                         " --NotebookApp.base_url=\"${NB_PREFIX:-/}\""),
        dask_version="2026.7.1",
        python="3.11",
        home="/home/rapids",
        user=(1001, 1000),  # as base 25.10 (main at ddc94029: the same useradd, USER and labels)
        modules=frozenset({"dask", "distributed", "dask_cuda", "cudf", "xgboost", "pandas", "pyarrow", "numpy",
                           "cupy", "jupyterlab", "dask_labextension"}),
        cuda_major=12,
    ),
    PYTHON_SLIM_BOOKWORM,
    PYTHON_SLIM_TRIXIE,
)

# The user the pods run as when the image's own is root (the paper's) or unknown: not root
# (the Pod Security Standards' restricted level), the RAPIDS images' conda group, and a home of
# its own on an emptyDir (root's home is not this user's to write).
RUN_AS = (1000, 1000)
RUN_AS_HOME = "/home/dask"


@dataclass(frozen=True)
class PodUser:
    uid: int
    gid: int
    home: str
    own_home: bool  # the home is an emptyDir the pod mounts (the image has none for this user)


def pod_user(image: str) -> PodUser:
    """Who the Dask pods of ``image`` run as: the image's non-root user, else RUN_AS."""
    facts = image_facts(image)
    if facts is not None and facts.user is not None:
        return PodUser(facts.user[0], facts.user[1], facts.home, own_home=False)
    return PodUser(RUN_AS[0], RUN_AS[1], RUN_AS_HOME, own_home=True)


_CUDA_IN_TAG = re.compile(r"(?:^|[-_])cuda(\d+)")


def image_cuda_major(image: str) -> int | None:
    """The CUDA major an image is built for: its recorded fact, else the ``cuda<N>`` part of
    the tag as RAPIDS and NVIDIA images name it (``26.10-cuda13-py3.11``), else None."""
    facts = image_facts(image)
    if facts is not None and facts.cuda_major is not None:
        return facts.cuda_major
    match = _CUDA_IN_TAG.search(ImageRef.parse(image).tag or "")
    return int(match.group(1)) if match else None


def pip_cache_mount(image: str) -> str:
    """Where pip keeps its cache for the image's user: the pip-cache claim is mounted there,
    so EXTRA_PIP_PACKAGES downloads once for every worker and restart."""
    return f"{pod_user(image).home}/.cache/pip"

# A shell or REPL without arguments as the main process reads its stdin, which in a pod is
# empty (a Deployment's containers get no stdin or TTY unless asked), so it exits at once
# and the kubelet restarts it in a loop.
EXITS_WITHOUT_TTY = ("/bin/bash", "bash", "/bin/sh", "sh", "ipython", "python")


def image_facts(image: str) -> ImageFacts | None:
    return next((facts for facts in IMAGES if facts.matches(image)), None)


@dataclass(frozen=True)
class NannyEnvironFact:
    """Which ``distributed.nanny`` key gives a worker process its environment, from which
    Dask version, and whether a ``None`` value unsets a variable there."""

    since: tuple[int, int, int]
    key: str
    variable: str
    none_unsets: bool
    source: str


NANNY_ENVIRON: tuple[NannyEnvironFact, ...] = (
    NannyEnvironFact(
        since=(2021, 1, 0), key="distributed.nanny.environ", variable="DASK_DISTRIBUTED__NANNY__ENVIRON",
        none_unsets=False,
        source=("distributed 2021.09.1 distributed/nanny.py (Nanny.__init__: config_environ, values made str;"
                " WorkerProcess._run: os.environ.update(env)) and distributed/distributed.yaml (nanny: preload,"
                " preload-argv, environ: MALLOC_TRIM_THRESHOLD_ 65536, OMP/MKL_NUM_THREADS 1)"),
    ),
    NannyEnvironFact(
        since=(2022, 8, 1), key="distributed.nanny.pre-spawn-environ",
        variable="DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON", none_unsets=True,
        source="distributed 2022.8.1 distributed/distributed.yaml (nanny.pre-spawn-environ, set before the spawn)",
    ),
)


def version_tuple(version: str) -> tuple[int, ...]:
    """``2021.09.1`` -> (2021, 9, 1); a pre-release suffix (``2024.1.0rc1``) is ignored."""
    parts = [re.sub(r"\D.*", "", part) for part in version.split(".")[:3]]  # each part's leading digits
    if not parts or not all(parts):
        raise ValueError("must be a Dask version such as 2024.1.1")
    return tuple(int(part) for part in parts)


def nanny_environ_fact(dask_version: str) -> NannyEnvironFact:
    """The newest fact that holds for ``dask_version``; ValueError for a version before all."""
    version = version_tuple(dask_version)
    held = [fact for fact in NANNY_ENVIRON if version >= fact.since]
    if not held:
        raise ValueError(f"no fact recorded for Dask {dask_version}'s nanny environment"
                         " (components/facts/dask_facts.py)")
    return max(held, key=lambda fact: fact.since)


# The dask-worker / dask-cuda-worker command lines are click commands: a non-``multiple``
# option given twice keeps the last value (click 8 parser.py: Option.process stores
# ``state.opts[self.dest] = value`` for action "store"), so ``--memory-limit`` in extraArgs
# (after the chart's own) is the one the worker uses.
CLICK_LAST_OPTION_WINS = "click 8.0 src/click/parser.py, Option.process (action 'store')"


# The chart's scheduler Deployment runs the ``dask-scheduler`` script (dask chart 2024.1.1,
# templates/dask-scheduler-deployment.yaml: ``args: [dask-scheduler, ...]``; the worker's is
# ``worker.image.dask_worker``, default ``dask-worker``). distributed removed both scripts in
# 2026.6.0 (dask/distributed #9240; ``dask scheduler`` / ``dask worker`` since 2022.10.0).
CHART_SCRIPTS = ("dask-scheduler", "dask-worker")
SCRIPTS_REMOVED_IN = (2026, 6, 0)


def chart_script_warning(dask_version: str) -> str | None:
    """Why the chart's pods would not start on an image of this Dask, or None."""
    if version_tuple(dask_version) < SCRIPTS_REMOVED_IN:
        return None
    return (f"the dask chart runs {' and '.join(CHART_SCRIPTS)}, which distributed removed in 2026.6.0"
            f" (daskImageDaskVersion is {dask_version}): the image must provide them (images/dask-runtime"
            " installs both as wrappers of `dask scheduler` / `dask worker`), or use daskBackend=operator")
