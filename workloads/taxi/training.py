"""XGBoost training that survives the loss of a worker, with the model an undisturbed
run gives.

``xgboost.dask.train`` does not survive one: when a worker dies mid-training the other
ranks' allreduce fails ("Resilience is not yet supported"). :func:`train` retries the
whole training once the cluster has its workers back, and makes the retry train on the
same rows in the same places, so that its model is bit for bit the undisturbed one:

* The model depends on which rows each XGBoost rank holds (each rank sketches quantiles,
  builds histograms and subsamples rows over its own rows), so it would change with
  wherever Dask happened to keep each partition. :func:`place` fixes that: the split's
  training half of partition ``i`` is made on the worker XGBoost gives rank
  ``i % n`` (the task that draws the half runs there), so rank ``j`` holds partitions
  ``j, j+n, j+2n, ...`` in order. XGBoost ranks workers by the string
  ``[xgboost.dask-<worker name>]:<address>``; a nanny restarts a lost worker under its
  old name, so each rank gets its old partitions back on the retry.
* Each partition's half is drawn from a generator seeded by the split's seed and the
  partition's number (:class:`Split`), and the halves keep their lineage (same files,
  same seeds): Dask recomputes the ones a lost worker held, and every attempt places the
  same rows.

Placing copies nothing the split would not make anyway: a half is written where it is
trained on (a cleansed partition kept on another worker is sent there first, and freed
once both its halves exist), XGBoost takes each rank's partitions as they are, and its
feature and label columns are views of them.

With ``per_host`` ranks (``--xgb-ranks per-host``) only the first worker of each host (in
XGBoost's rank order) becomes a rank, and it trains with the threads of all that host's
workers: workers on one host then share one histogram per tree level instead of
synchronising theirs over an allreduce at every level (the suite's
``taxi_train_dask_vs_single``, docs/results/*.json, compares it with single-process XGBoost).
"""
from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from distributed import Client, Future, wait

from workloads.core.errors import WorkersLostError

logger = logging.getLogger(__name__)

LOSS_GRACE_S = 5.0  # after a failed attempt: how long the scheduler may take to notice a lost worker
POLL_S = 0.25


@dataclass(frozen=True)
class Split:
    """The train/test split: each row of partition ``i`` goes to the test half with
    probability ``test_fraction``, drawn from a generator seeded by ``(seed, i)``, so a
    partition recomputed after a lost worker splits exactly as it did the first time."""

    test_fraction: float
    seed: int

    def half(self, frame: Any, index: int, test: bool) -> Any:
        """Partition ``index``'s rows of one half (original order, a fresh RangeIndex)."""
        import numpy as np

        in_test = np.random.default_rng([self.seed, index]).random(len(frame)) < self.test_fraction
        return frame.take(np.flatnonzero(in_test if test else ~in_test)).reset_index(drop=True)

    def train_half(self, frame: Any, index: int) -> Any:
        return self.half(frame, index, test=False)


@dataclass
class Persisted:
    """A frame persisted partition by partition on the workers (the model-ready frame, one
    half of the split)."""

    parts: list[Future]
    meta: Any  # an empty partition: the columns and their types

    @property
    def columns(self) -> list[str]:
        return list(self.meta.columns)

    def frame(self) -> Any:
        import dask.dataframe as dd

        return dd.from_delayed(self.parts, meta=self.meta, verify_meta=False)


@dataclass
class Placed(Persisted):
    """The training half, partition by partition, partition ``i`` on the worker of XGBoost
    rank ``i % len(workers)``: nothing is concatenated or copied to place it."""

    workers: list[str] = field(default_factory=list)  # rank order
    per_host: bool = False  # one rank per host (ranked_workers)

    def rank_worker(self, index: int) -> str:
        return self.workers[index % len(self.workers)]


def current_workers(client: Client) -> dict[str, dict[str, Any]]:
    """The scheduler's workers, asked now. Not ``client.scheduler_info()``: it returns the
    client's cached identity, which the client's own periodic refresh (with no workers
    in it) can overwrite between the fetch and the return."""
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def ranked_workers(client: Client, place: list[str] | None, per_host: bool = False) -> list[str]:
    """The workers a run may use, in the order XGBoost gives them ranks; with ``per_host``
    the first of each host only."""
    info = current_workers(client)
    usable = [address for address in info if place is None or address in place]
    ranked = sorted(usable, key=lambda address: f"[xgboost.dask-{info[address].get('name')}]:{address}")
    if not per_host:
        return ranked
    hosts: dict[str, str] = {}
    for address in ranked:
        hosts.setdefault(info[address].get("host") or address, address)
    return list(hosts.values())


def host_threads(client: Client, ranks: list[str], place: list[str] | None) -> int:
    """The threads of all the usable workers on the host of each of ``ranks`` (their
    common count; 0 when hosts differ)."""
    info = current_workers(client)
    usable = [address for address in info if place is None or address in place]
    counts = {sum(info[a]["nthreads"] for a in usable if info[a].get("host") == info[rank].get("host"))
              for rank in ranks}
    return counts.pop() if len(counts) == 1 else 0


def place(client: Client, parts: list[Future], task: Callable[[Any, int], Any], workers: list[str], meta: Any,
          per_host: bool = False, restrict: list[str] | None = None) -> Placed:
    """Submit ``task(part, i)`` for each of ``parts`` on the worker of rank
    ``i % len(workers)`` (see the module docstring): the split's training half, or, on a
    retry, the same partitions moved to the new ranks. ``parts`` is emptied, so each of
    them is freed as soon as the tasks that need it are done. An unrestricted run lets a
    lost worker's partitions be recomputed anywhere (a retry places them again);
    ``restrict``: the workers a restricted run may use."""
    if not workers:
        raise WorkersLostError("no worker to place the training data on")
    placed = Placed([], meta, list(workers[:len(parts)]), per_host)
    placed.parts = [client.submit(task, part, i, workers=[placed.rank_worker(i)], allow_other_workers=restrict is None,
                                  pure=False) for i, part in enumerate(parts)]
    parts.clear()
    return placed


def wait_placed(client: Client, placed: Placed) -> None:
    """Wait until every placed partition exists on its rank's worker; WorkersLostError if
    one of the ranks' workers leaves meanwhile. A partition the scheduler's work stealing
    made elsewhere (a task restricted only loosely may be stolen by an idle worker) is
    moved to its rank with a strict restriction; the move replaces it only once done, so
    a worker lost meanwhile leaves ``placed`` with partitions any worker can recompute."""
    _wait_unless_lost(client, placed.parts, placed.workers)
    holders = client.who_has(placed.parts)
    stolen = [i for i, part in enumerate(placed.parts) if placed.rank_worker(i) not in holders.get(part.key, ())]
    moved = [client.submit(_same, placed.parts[i], i, workers=[placed.rank_worker(i)], allow_other_workers=False,
                           pure=False) for i in stolen]
    _wait_unless_lost(client, moved, placed.workers)
    for i, part in zip(stolen, moved, strict=True):
        placed.parts[i] = part


def _wait_unless_lost(client: Client, futures: list[Future], workers: list[str]) -> None:
    while True:
        try:
            wait(futures, timeout=1)
            return
        except TimeoutError:
            gone = lost_workers(client, workers)
            if gone:
                raise WorkersLostError(f"lost {', '.join(gone)} while placing the training data") from None


def place_surviving_losses(client: Client, parts: list[Future], task: Callable[[Any, int], Any], meta: Any,
                           place_on: list[str] | None, attempts: int, recovery_timeout_s: float,
                           per_host: bool = False) -> Placed:
    """:func:`place` on the ranked workers and wait; a worker lost meanwhile is survived
    like a loss during training: wait (at most ``recovery_timeout_s``) until the cluster
    has as many workers as before, rank them again and move the partitions (the lost
    ones recomputed from their lineage) to the new ranks, up to ``attempts`` placements
    in all. A restricted run cannot take a replacement and fails at once."""
    ranked = ranked_workers(client, place_on, per_host)
    placed = place(client, parts, task, ranked, meta, per_host, restrict=place_on)
    for attempt in range(1, attempts + 1):
        try:
            wait_placed(client, placed)
            return placed
        except WorkersLostError as exc:
            gone = lost_workers(client, placed.workers)
            logger.warning("placing the training data, attempt %d of %d: %s", attempt, attempts, exc)
            if place_on is not None:
                raise WorkersLostError(f"placing the training data lost {', '.join(gone)}, one of the workers this run"
                                       " is restricted to; a restricted run cannot take its replacement: run it"
                                       " again") from exc
            if attempt == attempts:
                raise WorkersLostError(f"placing the training data lost a worker in each of its {attempts}"
                                       f" attempt(s) (--train-attempts): {', '.join(gone)}") from exc
            wait_for_workers(client, len(placed.workers), recovery_timeout_s, gone)
            placed = place(client, placed.parts, _same, ranked_workers(client, place_on, per_host), meta, per_host)
    raise AssertionError("unreachable: the last attempt returns or raises")


def train(client: Client, placed: Placed, params: dict[str, Any], target: str, num_boost_round: int,
          place_on: list[str] | None, attempts: int, recovery_timeout_s: float) -> tuple[Any, dict[str, Any]]:
    """Train on ``placed``; after an attempt that lost a worker, wait (at most
    ``recovery_timeout_s``) until the cluster has as many workers as before, place the
    same groups again and retry, up to ``attempts`` attempts in all. Returns the booster
    and the metrics ``train_attempts``, ``train_workers_lost``, ``train_attempt_seconds``
    and ``train_recovery_seconds`` (waiting for the workers to come back)."""
    import xgboost.dask as dxgb

    want = len(placed.workers)
    info: dict[str, Any] = {"train_attempts": 0, "train_workers_lost": [], "train_attempt_seconds": [],
                            "train_recovery_seconds": 0.0}
    x_columns = [c for c in placed.columns if c != target]
    for attempt in range(1, attempts + 1):
        info["train_attempts"] = attempt
        started = time.perf_counter()
        ranked = placed.workers if attempt == 1 else ranked_workers(client, place_on, placed.per_host)[:want]
        try:
            if attempt > 1:  # the lost worker's partitions are recomputed from their lineage, then moved
                placed = place(client, placed.parts, _same, ranked, placed.meta, placed.per_host, restrict=place_on)
                wait_placed(client, placed)
            frame = placed.frame()
            # XGBoost waits on the matrix's parts with distributed.wait, i.e. on the
            # *current* client: a caller inside `with Client(...)` of another client
            # would make it block the event loop for good.
            with client.as_current():
                matrix = placed_matrix(client, placed, frame[x_columns], frame[target])
                booster = dxgb.train(client, params, matrix, num_boost_round=num_boost_round)["booster"]
            return booster, info
        except Exception as exc:
            gone = lost_workers(client, ranked, grace=LOSS_GRACE_S)
            if not gone:
                raise
            info["train_workers_lost"].extend(gone)
            logger.warning("training attempt %d of %d lost %s (%s: %s)", attempt, attempts, ", ".join(gone),
                           type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
            if place_on is not None:
                raise WorkersLostError(f"training lost {', '.join(gone)}, one of the workers this run is restricted"
                                       " to; a restricted run cannot take its replacement: run it again") from exc
            if attempt == attempts:
                raise WorkersLostError(f"training lost a worker in each of its {attempts} attempt(s)"
                                       f" (--train-attempts): {', '.join(info['train_workers_lost'])}") from exc
            waited = time.perf_counter()
            wait_for_workers(client, want, recovery_timeout_s, gone)
            info["train_recovery_seconds"] += round(time.perf_counter() - waited, 3)
        finally:
            info["train_attempt_seconds"].append(round(time.perf_counter() - started, 3))
            matrix = frame = None
    raise AssertionError("unreachable: the last attempt returns or raises")


MATRIX_TRIES = 3


class PlacementError(RuntimeError):
    """The matrix's parts are not on the workers their partitions were placed on."""


def placed_matrix(client: Client, placed: Placed, features: Any, label: Any) -> Any:
    """``DaskQuantileDMatrix`` of the placed partitions, each part on its rank's worker.

    XGBoost packs each partition's features and label in a task of its own, submitted
    without restrictions; a new kind of task is estimated at 0.5 s until one has run
    (``distributed.scheduler.unknown-task-duration``), so the scheduler's work stealing
    may move some of the first packing tasks to an idle worker, which XGBoost would then
    make a rank of. The packing runs restricted to the ranks' workers (all of them on a
    one-host run with ``per_host``), and a matrix with a part elsewhere all the same is
    built again (the packing then known to be quick, it is not stolen)."""
    import xgboost.dask as dxgb

    for attempt in range(1, MATRIX_TRIES + 1):
        with restricted_to(placed.workers):
            matrix = dxgb.DaskQuantileDMatrix(client, features, label)
        try:
            check_placement(matrix, placed)
            return matrix
        except PlacementError as exc:
            if lost_workers(client, placed.workers) or attempt == MATRIX_TRIES:
                raise
            logger.info("building the training matrix again (%s)", exc)
    raise AssertionError("unreachable: the last try returns or raises")


@contextlib.contextmanager
def restricted_to(workers: list[str] | None) -> Iterator[None]:
    """Tasks submitted inside run on ``workers`` only (no restriction when None), those
    libraries submit for themselves included. Dask's dataframe graphs ignore annotations,
    and say so: theirs are restricted by ``persist``/``compute(workers=...)``, or are views
    on partitions already placed."""
    import dask

    if not workers:
        yield
        return
    with dask.annotate(workers=list(workers), allow_other_workers=False), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Dask annotations .* detected", category=UserWarning)
        yield


def check_placement(matrix: Any, placed: Placed) -> None:
    """Every rank's partitions where :func:`place` put them; a partition Dask recomputed
    elsewhere (its worker was lost) breaks that, and the attempt is lost with it."""
    found = {address: len(parts) for address, parts in matrix.worker_map.items()}
    expected = dict(Counter(placed.rank_worker(i) for i in range(len(placed.parts))))
    if found != expected:
        raise PlacementError(f"training data not where it was placed: {found}, expected {expected}")


def lost_workers(client: Client, workers: list[str], grace: float = 0.0) -> list[str]:
    """Those of ``workers`` the scheduler no longer has, waiting up to ``grace`` seconds
    for it to notice one."""
    deadline = time.monotonic() + grace
    while True:
        if client.status != "running":  # the scheduler itself is lost: not a worker loss to retry
            return []
        current = set(current_workers(client))
        gone = [address for address in workers if address not in current]
        if gone or time.monotonic() >= deadline:
            return gone
        time.sleep(POLL_S)


def wait_for_workers(client: Client, want: int, timeout: float, gone: list[str]) -> None:
    deadline = time.monotonic() + timeout
    while (have := len(current_workers(client))) < want:
        if time.monotonic() >= deadline:
            raise WorkersLostError(f"training lost {', '.join(gone)} and only {have} of {want} workers were back"
                                   f" after {timeout:.0f} s (--recovery-timeout)")
        time.sleep(POLL_S)


def _same(part: Any, index: int) -> Any:
    """A placed partition as it is (moved to the worker its task runs on)."""
    return part
