"""XGBoost training that survives the loss of a worker, with the model an undisturbed
run gives.

``xgboost.dask.train`` does not survive one: when a worker dies mid-training the other
ranks' allreduce fails ("Resilience is not yet supported"). :func:`train` retries the
whole training once the cluster has its workers back, and makes the retry train on the
same rows in the same places, so that its model is bit for bit the undisturbed one:

* The model depends on which rows each XGBoost rank holds (each rank sketches quantiles,
  builds histograms and subsamples rows over its own rows), so it would change with
  wherever Dask happened to keep each partition. :func:`place` fixes that: group ``j``
  (partitions ``j, j+n, j+2n, ...`` of the split, concatenated in order) goes to the
  worker XGBoost gives rank ``j``. XGBoost ranks workers by the string
  ``[xgboost.dask-<worker name>]:<address>``; a nanny restarts a lost worker under its
  old name, so each rank gets its old group back on the retry.
* The split's partitions stay persisted for the whole phase: Dask recomputes the ones a
  lost worker held from their lineage (same files, same seeds), so every attempt places
  the same rows.

Placing costs one copy of the training columns (moved where a partition is not already
on its rank's worker); it is timed in ``split``, which prepares the training data.

With ``per_host`` ranks (``--xgb-ranks per-host``) only the first worker of each host (in
XGBoost's rank order) becomes a rank, and it trains with the threads of all that host's
workers: workers on one host then share one histogram per tree level instead of
synchronising theirs over an allreduce at every level (on 2 cores, 2 ranks x 1 thread
spent most of the difference to single-process XGBoost in those allreduces).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from distributed import Client, Future, wait

from ..exceptions import WorkersLostError

logger = logging.getLogger(__name__)

LOSS_GRACE_S = 5.0  # after a failed attempt: how long the scheduler may take to notice a lost worker
POLL_S = 0.25


@dataclass
class Placed:
    """The training columns, one partition per XGBoost rank, on that rank's worker."""

    source: Any  # the persisted training half (all columns), kept for the retries
    columns: list[str]
    workers: list[str]  # rank order
    parts: list[Future]  # parts[j] lives on workers[j]
    per_host: bool = False  # one rank per host (ranked_workers)

    def frame(self) -> Any:
        import dask.dataframe as dd

        return dd.from_delayed(self.parts, meta=self.source._meta[self.columns], verify_meta=False)


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


def place(client: Client, source: Any, columns: list[str], workers: list[str], per_host: bool = False,
          restrict: list[str] | None = None) -> Placed:
    """Put group ``j`` of ``source``'s partitions on ``workers[j]`` (see the module
    docstring); waits until every group is there. Raises WorkersLostError if one of
    ``workers`` leaves meanwhile (its group could never be placed). ``restrict``: the
    workers a restricted run may use (the partitions are computed there too)."""
    if not workers:
        raise WorkersLostError("no worker to place the training data on")
    sources = client.compute(source[columns].to_delayed(), workers=restrict)
    count = min(len(workers), len(sources))
    parts = [client.submit(_concat, *sources[j::count], workers=[workers[j]], allow_other_workers=False,
                           pure=False) for j in range(count)]
    placed = Placed(source, columns, list(workers[:count]), parts, per_host)
    while True:
        try:
            wait(parts, timeout=1)
            return placed
        except TimeoutError:
            gone = lost_workers(client, placed.workers)
            if gone:
                raise WorkersLostError(f"lost {', '.join(gone)} while placing the training data") from None


def place_surviving_losses(client: Client, source: Any, columns: list[str], place_on: list[str] | None,
                           attempts: int, recovery_timeout_s: float, per_host: bool = False) -> Placed:
    """:func:`place` on the ranked workers; a worker lost while the groups are placed is
    survived like a loss during training: wait (at most ``recovery_timeout_s``) until the
    cluster has as many workers as before, rank them again and place again, up to
    ``attempts`` placements in all."""
    for attempt in range(1, attempts + 1):
        ranked = ranked_workers(client, place_on, per_host)
        try:
            return place(client, source, columns, ranked, per_host, restrict=place_on)
        except WorkersLostError as exc:
            gone = lost_workers(client, ranked)
            logger.warning("placing the training data, attempt %d of %d: %s", attempt, attempts, exc)
            if attempt == attempts:
                raise WorkersLostError(f"placing the training data lost a worker in each of its {attempts}"
                                       f" attempt(s) (--train-attempts): {', '.join(gone)}") from exc
            wait_for_workers(client, len(ranked), recovery_timeout_s, gone)
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
            if attempt > 1:
                placed = place(client, placed.source, placed.columns, ranked, placed.per_host, restrict=place_on)
            frame = placed.frame()
            # XGBoost waits on the matrix's parts with distributed.wait, i.e. on the
            # *current* client: a caller inside `with Client(...)` of another client
            # would make it block the event loop for good.
            with client.as_current():
                matrix = dxgb.DaskQuantileDMatrix(client, frame[x_columns], frame[target])
                check_placement(matrix, placed)
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
            matrix = frame = None  # noqa: F841 (this attempt's futures go before the next is placed)
    raise AssertionError("unreachable: the last attempt returns or raises")


def check_placement(matrix: Any, placed: Placed) -> None:
    """Every rank's group where :func:`place` put it; a partition Dask recomputed
    elsewhere (its worker was lost) breaks that, and the attempt is lost with it."""
    found = {address: len(parts) for address, parts in matrix.worker_map.items()}
    expected = {address: 1 for address in placed.workers}
    if found != expected:
        raise RuntimeError(f"training data not where it was placed: {found}, expected {expected}")


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


def _concat(*parts: Any) -> Any:
    from dask.dataframe.dispatch import concat

    return parts[0] if len(parts) == 1 else concat(list(parts), ignore_index=True)
