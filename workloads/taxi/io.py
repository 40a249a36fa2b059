"""Finding and reading the yellow-taxi files: CSV and Parquet, both schemas, bad files.

``plan`` (run on a worker: the dataset lives on the workers' volume, which the client may
not mount) lists ``<data_dir>/taxi/`` (or the paper's ``taxi-csv/``), reads each file's
header or Parquet footer, and cuts the file into chunks: byte ranges of a CSV, groups of
row groups of a Parquet file. ``read_chunk`` turns one chunk into a typed table
(``schema.RAW_SCHEMA``) plus a count of what it had to drop.

Problems in the data are reported, never fatal, per file and per reason, and every row
dropped is counted under its reason. Units differ by reason:

========================  =======  ==================================================
reason                    counts   meaning
========================  =======  ==================================================
``empty_file``            files    a 0-byte file
``header_only``           files    a CSV header (or a Parquet schema) without rows
``unreadable_file``       files    not a CSV/Parquet file this reader can open
``missing_column``        files    lacks a column the benchmark uses; skipped whole
``unknown_column``        columns  a column outside the TLC schemas; ignored
``wrong_field_count``     lines    a CSV line with more or fewer fields than its header
``unparsable_value``      lines    a number, datetime or Y/N flag that does not parse
``unreadable_chunk``      lines    the lines (Parquet: rows) of a block the parser
                                   rejects as a whole
========================  =======  ==================================================

A datetime written as a date in another layout (``1/1/2019 0:46``: the month re-saved by a
spreadsheet program) is not a damaged value but a file in another format: counted as
unparsable, it would drop every row of the file and leave the run training on the rest.
The read fails instead (``TimestampFormatError``), naming the file, the column, the TLC's
format and the value. Such a file is refused, not read: its layout is ambiguous (month or
day first) and has lost the seconds, which the trip-duration feature uses.

An I/O error is not a problem in the data and never drops a row: a read that raises
``OSError`` (an NFS hiccup: ``EIO``, ``ESTALE``, a timeout) is retried from the start of
its chunk ``READ_ATTEMPTS`` times with a doubling pause, each retry logged with the file
and the byte range (or row groups); if the last attempt fails too, ``ReadError`` names
them and the read's task, and so the run, fails. The same holds for the reads ``plan``
makes.

A CSV chunk owns the lines that *start* inside its byte range, so neighbouring chunks
never share or lose a line (quoted fields with embedded newlines do not occur in these
files and are not supported).
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from io import RawIOBase
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from workloads.core.errors import DatasetError

if TYPE_CHECKING:
    import pandas as pd

from . import schema as s

logger = logging.getLogger(__name__)

DIRECTORIES = ("taxi", "taxi-csv")  # the dataset layout's name first, then the paper's
FORMATS = {".csv": "csv", ".parquet": "parquet"}
REASONS = ("empty_file", "header_only", "unreadable_file", "missing_column", "unknown_column",
           "wrong_field_count", "unparsable_value", "unreadable_chunk")
_HEADER_LIMIT = 1 << 16  # a header line longer than this is not a TLC header
_SMALL_FILE = 1 << 16  # a rest this short is read to tell "header only" from "has rows"
PARSE_BLOCK = 1 << 20  # bytes of CSV text the reader parses at a time
# An NFS soft mount reports a server that stops answering as EIO after its timeo x retrans
# (seconds); 4 attempts 1 + 2 + 4 s apart ride out a short outage without hiding a long one.
READ_ATTEMPTS = 4
READ_BACKOFF_S = 1.0


class ReadError(DatasetError):
    """A read that kept failing with an I/O error: the file and the range are named,
    and the run fails rather than go on without those rows."""


class TimestampFormatError(DatasetError):
    """A datetime column holds dates in another layout than the TLC's (module docstring)."""


TLC_DATETIME = "YYYY-MM-DD HH:MM:SS"  # how the TLC's CSV files write a datetime: 2019-01-01 00:46:40
# A date laid out otherwise, before any time: month or day first (1/1/2019, 01.01.2019,
# 01-01-2019). The year first is read whatever the separator (2019/01/01: the text path's
# ISO 8601 parser takes it, and it is unambiguous); the TLC's layout with a damaged number
# (2019-01-32) stays one unparsable value.
_OTHER_DATE_LAYOUT = re.compile(r"\s*\d{1,2}([/.-])\d{1,2}\1\d{2,4}\b")


@dataclass(frozen=True)
class Chunk:
    """One partition's worth of one file."""

    path: str
    format: str  # "csv" | "parquet"
    columns: tuple[str, ...]  # the file's columns, canonical spelling, in file order
    start: int = 0  # CSV: byte range [start, end) of the lines this chunk owns
    end: int = 0
    row_groups: tuple[int, ...] = ()  # Parquet


@dataclass
class FilePlan:
    name: str
    format: str
    bytes: int
    schema: str = ""
    problems: dict[str, int] = field(default_factory=dict)
    unknown_columns: tuple[str, ...] = ()
    chunks: list[Chunk] = field(default_factory=list)
    detail: str = ""  # why a file-level problem skips it, in the reader's words (one line)


@dataclass
class ChunkResult:
    """A chunk's typed rows and what was dropped on the way."""

    table: pa.Table
    problems: dict[str, int] = field(default_factory=dict)


def taxi_directory(data_dir: str | Path) -> Path:
    """``<data_dir>/taxi`` or, failing that, the paper's ``<data_dir>/taxi-csv``."""
    root = Path(data_dir)
    for name in DIRECTORIES:
        if (root / name).is_dir():
            return root / name
    looked = " or ".join(str(root / name) for name in DIRECTORIES)
    raise DatasetError(f"no taxi data directory: neither {looked} exists")


def find_files(data_dir: str | Path, pattern: str) -> list[Path]:
    """The ``pattern.csv`` and ``pattern.parquet`` files of the taxi directory, sorted."""
    directory = taxi_directory(data_dir)
    globs = [pattern + suffix for suffix in FORMATS]
    paths = sorted({p for g in globs for p in directory.glob(g) if p.is_file()})
    if not paths:
        raise DatasetError(f"no files matching {' or '.join(globs)} in {directory}")
    return paths


def plan(data_dir: str, pattern: str, block_bytes: int) -> list[FilePlan]:
    """Every matching file's header, problems found so far and chunks."""
    if block_bytes <= 0:
        raise ValueError(f"block_bytes must be positive, got {block_bytes}")
    plans = []
    for path in find_files(data_dir, pattern):
        file_plan = with_retries(f"{path} (header)", _plan_file, path, block_bytes)
        if file_plan.problems and file_plan.chunks:
            logger.warning("%s: %s", path, file_plan.problems)
        elif file_plan.problems:  # the run names it on the client, beside the other files skipped
            logger.info("%s: skipped: %s", path, skip_reason(file_plan.problems, file_plan.detail))
        plans.append(file_plan)
    return plans


_UNITS = {"unknown_column": "columns", "wrong_field_count": "lines", "unparsable_value": "lines",
          "unreadable_chunk": "lines"}  # the reasons not counted in files (module docstring)


def skip_reason(problems: dict[str, int], detail: str = "") -> str:
    """Why a file gave no rows, on one line: its problems (``unparsable_value (50 lines)``)
    and the reader's own words for a file-level one."""
    parts = [f"{reason} ({problems[reason]:,} {_UNITS[reason]})" if reason in _UNITS else reason
             for reason in REASONS if problems.get(reason)]
    text = ", ".join(parts) or "no rows"
    return f"{text}: {detail}" if detail else text


def _plan_file(path: Path, block_bytes: int) -> FilePlan:
    """One file's plan, made afresh by each attempt (a failed one leaves nothing behind)."""
    fmt = FORMATS[path.suffix]
    file_plan = FilePlan(name=path.name, format=fmt, bytes=path.stat().st_size)
    if file_plan.bytes == 0:
        file_plan.problems["empty_file"] = 1
        file_plan.detail = "0 bytes"
    elif fmt == "csv":
        _plan_csv(path, file_plan, block_bytes)
    else:
        _plan_parquet(path, file_plan, block_bytes)
    return file_plan


def _check_columns(columns: tuple[str, ...], file_plan: FilePlan) -> bool:
    """Record unknown and missing columns; False when the file cannot be used."""
    file_plan.schema = s.schema_name(columns)
    file_plan.unknown_columns = tuple(c for c in columns if c not in s.FILE_TYPES)
    if file_plan.unknown_columns:
        file_plan.problems["unknown_column"] = len(file_plan.unknown_columns)
    missing = [name for name in s.USED if name not in columns]
    if missing:
        file_plan.problems["missing_column"] = 1
        more = f" and {len(missing) - 3} more" if missing[3:] else ""
        file_plan.detail = "no column " + ", ".join(missing[:3]) + more
        return False
    return True


def _plan_csv(path: Path, file_plan: FilePlan, block_bytes: int) -> None:
    with open(path, "rb") as fh:
        first = fh.readline(_HEADER_LIMIT)
        rest = fh.read(_SMALL_FILE + 1) if file_plan.bytes - len(first) <= _SMALL_FILE else b"x"
    try:
        header = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        file_plan.problems["unreadable_file"] = 1
        file_plan.detail = "the first line is not UTF-8 text (compressed, or not a CSV file?)"
        return
    columns = tuple(s.canonical(name) for name in header.strip().split(","))
    if not _check_columns(columns, file_plan):
        return
    if not rest.strip():
        file_plan.problems["header_only"] = 1
        file_plan.detail = "a header without rows"
        return
    file_plan.chunks = [Chunk(str(path), "csv", columns, start, end)
                        for start, end in even_ranges(len(first), file_plan.bytes, block_bytes)]


def even_ranges(begin: int, end: int, most: int) -> list[tuple[int, int]]:
    """``[begin, end)`` cut into the fewest ranges of at most ``most`` bytes, of sizes
    that differ by at most one byte. Dask assigns a group of at most twice as many tasks as
    threads at once, without its queue (``Scheduler.is_rootish``, distributed 2026.7.1), so
    with one large and one small partition per file a worker may get the large ones, and
    the load waits for it."""
    count = -(-(end - begin) // most)
    return [(begin + (end - begin) * k // count, begin + (end - begin) * (k + 1) // count) for k in range(count)]


def _plan_parquet(path: Path, file_plan: FilePlan, block_bytes: int) -> None:
    try:
        metadata = pq.ParquetFile(path).metadata
    except pa.ArrowInvalid as error:  # not Parquet, or cut short; an OSError is an I/O error: retried
        file_plan.problems["unreadable_file"] = 1
        file_plan.detail = "not readable as Parquet: " + " ".join(str(error).split())
        return
    columns = tuple(s.canonical(name) for name in metadata.schema.to_arrow_schema().names)
    if not _check_columns(columns, file_plan):
        return
    if metadata.num_rows == 0:
        file_plan.problems["header_only"] = 1
        file_plan.detail = "a schema without rows"
        return
    groups: list[int] = []
    size = 0
    for index in range(metadata.num_row_groups):
        if metadata.row_group(index).num_rows == 0:
            continue
        groups.append(index)
        size += metadata.row_group(index).total_byte_size
        if size >= block_bytes:
            file_plan.chunks.append(Chunk(str(path), "parquet", columns, row_groups=tuple(groups)))
            groups, size = [], 0
    if groups:
        file_plan.chunks.append(Chunk(str(path), "parquet", columns, row_groups=tuple(groups)))


def line_range(path: str | Path, start: int, end: int) -> tuple[int, int]:
    """The byte range ``[begin, stop)`` of the lines that start in ``[start, end)``
    (``start`` is never inside the header: chunks begin after it)."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":
                fh.readline()  # the line in progress belongs to the previous chunk
        begin = fh.tell()
        if begin >= end:
            return begin, begin
        fh.seek(end - 1)  # the last line that starts before `end` ends at `stop`
        stop = end if fh.read(1) == b"\n" else end + len(fh.readline())
    return begin, stop


def read_range(path: str | Path, start: int, end: int) -> bytes:
    """The bytes of the lines that start in [start, end)."""
    begin, stop = line_range(path, start, end)
    with open(path, "rb") as fh:
        fh.seek(begin)
        return fh.read(stop - begin)


class _RangeStream(RawIOBase):
    """A file's bytes ``[begin, stop)`` as a stream, so the CSV reader pulls one parse
    block at a time instead of the chunk's text being read into memory whole."""

    def __init__(self, path: str | Path, begin: int, stop: int) -> None:
        super().__init__()
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed by this stream's close())
        self._file.seek(begin)
        self._left = stop - begin

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)[:self._left]
        count = self._file.readinto(view) if len(view) else 0
        self._left -= count
        return count

    def close(self) -> None:
        self._file.close()
        super().close()


def with_retries(where: str, read, *args):
    """``read(*args)``, retried on ``OSError`` (from the start: a retry never appends to
    what a failed attempt read); ``ReadError`` naming ``where`` once every attempt failed."""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return read(*args)
        except OSError as error:
            if attempt == READ_ATTEMPTS:
                raise ReadError(f"{where}: I/O error on each of {READ_ATTEMPTS} attempts, "
                                f"the last: {error!r}; stopping rather than going on "
                                f"without these rows") from error
            pause = READ_BACKOFF_S * 2 ** (attempt - 1)
            logger.warning("%s: I/O error (%r), attempt %d of %d; retrying in %.1f s",
                           where, error, attempt, READ_ATTEMPTS, pause)
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


def read_chunk(chunk: Chunk) -> ChunkResult:
    """Read ``chunk`` into the typed table; malformed lines are counted and dropped, an
    I/O error is retried and then raised (``ReadError``)."""
    return with_retries(f"{chunk.path} [{_where(chunk)}]", _read_chunk_once, chunk)


def _read_chunk_once(chunk: Chunk) -> ChunkResult:
    try:
        if chunk.format == "csv":
            table, problems = _read_csv(chunk)
        else:
            table, problems = _read_parquet(chunk), {}
    except (pa.ArrowException, UnicodeDecodeError) as error:
        if isinstance(error, OSError):  # pyarrow's I/O errors are OSErrors: retried
            raise
        lines = _rows_in(chunk)
        logger.warning("%s [%s]: the parser rejects the block, %d lines dropped: %s",
                       chunk.path, _where(chunk), lines, error)
        return ChunkResult(s.empty_raw_table(), {"unreadable_chunk": lines})
    try:
        table, unparsable = _normalize(table)
    except TimestampFormatError as error:
        raise TimestampFormatError(f"{chunk.path}: {error}") from None
    if unparsable:
        problems["unparsable_value"] = problems.get("unparsable_value", 0) + unparsable
    return ChunkResult(table, {k: v for k, v in problems.items() if v})


def _rows_in(chunk: Chunk) -> int:
    """The rows a chunk holds, without parsing it: its lines, or its row groups' rows."""
    if chunk.format == "parquet":
        metadata = pq.ParquetFile(chunk.path).metadata
        return sum(metadata.row_group(index).num_rows for index in chunk.row_groups)
    begin, stop = line_range(chunk.path, chunk.start, chunk.end)
    lines, last = 0, b"\n"
    with _RangeStream(chunk.path, begin, stop) as stream:  # a parse block at a time, as the reader
        for block in iter(lambda: stream.read(PARSE_BLOCK), b""):
            lines, last = lines + block.count(b"\n"), block[-1:]
    return lines + (last != b"\n")  # a last line without its newline


def _where(chunk: Chunk) -> str:
    if chunk.format == "csv":
        return f"bytes {chunk.start}-{chunk.end}"
    return f"row groups {list(chunk.row_groups)}"


def _read_csv(chunk: Chunk) -> tuple[pa.Table, dict[str, int]]:
    begin, stop = line_range(chunk.path, chunk.start, chunk.end)
    if stop <= begin:
        return s.empty_raw_table(), {}
    try:
        return _parse_csv(chunk.path, begin, stop, chunk.columns, s.CSV_PARSE_TYPES)
    except pa.ArrowInvalid as error:  # a value that does not parse: redo this chunk as bytes
        logger.info("%s [%s]: %s; parsing as text", chunk.path, _where(chunk), error)
        # binary, not string: a value that is not UTF-8 is then one unparsable value
        # instead of an error that rejects the whole chunk
        return _parse_csv(chunk.path, begin, stop, chunk.columns,
                          {name: pa.binary() for name in s.USED})


def _parse_csv(path: str, begin: int, stop: int, columns: tuple[str, ...],
               types: dict[str, pa.DataType]) -> tuple[pa.Table, dict[str, int]]:
    wrong = 0

    def skip(row: pacsv.InvalidRow) -> str:
        nonlocal wrong
        wrong += 1
        return "skip"

    with pa.PythonFile(_RangeStream(path, begin, stop), mode="r") as source:
        table = pacsv.read_csv(
            source,
            # block by block: parsed as one block, a chunk holds a multiple of its text at once
            read_options=pacsv.ReadOptions(column_names=list(columns), use_threads=False,
                                           block_size=PARSE_BLOCK),
            parse_options=pacsv.ParseOptions(invalid_row_handler=skip),
            convert_options=convert_options(types),
        )
    return table, {"wrong_field_count": wrong}


def _read_parquet(chunk: Chunk) -> pa.Table:
    parquet = pq.ParquetFile(chunk.path)
    in_file = {s.canonical(name): name for name in parquet.schema_arrow.names}
    table = parquet.read_row_groups(list(chunk.row_groups),
                                    columns=[in_file[name] for name in s.USED], use_threads=False)
    return table.rename_columns(list(s.USED))


def convert_options(types: dict[str, pa.DataType] = s.CSV_PARSE_TYPES) -> pacsv.ConvertOptions:
    """How the reader converts CSV fields: the used columns only, with ``types``, empty
    fields null, the flag's two spellings."""
    return pacsv.ConvertOptions(column_types=types, include_columns=list(s.USED), null_values=[""],
                                true_values=s.FLAG_TRUE, false_values=s.FLAG_FALSE,
                                strings_can_be_null=True, quoted_strings_can_be_null=True)


def _normalize(table: pa.Table) -> tuple[pa.Table, int]:
    """Cast every used column to its typed-frame type; rows with a value that does not
    convert are dropped and counted. A no-op cast on the CSV fast path."""
    columns = []
    bad = np.zeros(table.num_rows, dtype=bool)
    for name in s.USED:
        values, failed = _convert(table[name], name)  # chunk by chunk: no whole copy
        columns.append(values)
        if failed is not None:
            bad |= failed
    typed = pa.table(columns, schema=s.RAW_SCHEMA)
    if bad.any():
        typed = typed.filter(pa.array(~bad))
    return typed, int(bad.sum())


def _convert(values: pa.ChunkedArray, name: str) -> tuple[pa.ChunkedArray, np.ndarray | None]:
    """``values`` as the typed frame's type for column ``name`` and a mask of the entries
    that were present but did not convert (None when none can fail)."""
    target = s.RAW_TYPES[name]
    if pa.types.is_binary(values.type):
        values = _decoded(values)
    if name == s.STORE_AND_FWD and pa.types.is_boolean(values.type):  # the fast path: Y/N parsed
        return values.cast(target), None
    if name == s.STORE_AND_FWD:
        text = pc.utf8_trim_whitespace(values.cast(pa.string()))
        flag = pc.if_else(pc.equal(text, "Y"), 1.0, pc.if_else(pc.equal(text, "N"), 0.0, None))
        failed = pc.and_(pc.is_valid(text), pc.is_null(flag))
        return flag.cast(target), failed.to_numpy(zero_copy_only=False)
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return _convert_text(values, target, name)
    return values.cast(target, safe=False), None


def _decoded(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """Raw CSV bytes as text; bytes that are not UTF-8 become U+FFFD, which no number,
    datetime or flag parses, so the value counts as unparsable (the slow path only)."""
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.chunked_array([pa.array([None if v is None else v.decode("utf-8", "replace")
                                           for v in chunk.to_pylist()], type=pa.string())
                                 for chunk in values.chunks], type=pa.string())


def _refuse_other_layouts(failed: pd.Series, name: str) -> None:
    """``TimestampFormatError`` (``_read_chunk_once`` adds the file) for the first value of
    column ``name`` that is not ISO 8601 but is a date in another layout (a date-like shape
    that a lenient parser reads); a value that no parser reads (``not a date``, day 32)
    stays one unparsable value."""
    import pandas as pd

    for value in failed[failed.str.match(_OTHER_DATE_LAYOUT)]:
        if not pd.isna(pd.to_datetime(value, format="mixed", errors="coerce")):
            raise TimestampFormatError(
                f"column {name} holds dates in another format than the TLC's {TLC_DATETIME}, e.g. {value!r}"
                " (a file re-saved by a spreadsheet program?); refusing the file rather than dropping its rows:"
                " use the TLC's file")


def _convert_text(values: pa.ChunkedArray, target: pa.DataType, name: str) -> tuple[pa.Array, np.ndarray]:
    import pandas as pd  # only on the slow path: a chunk with unparsable values

    text = pd.Series(values.to_pandas(), dtype=object)
    present = text.notna() & (text.str.strip() != "")
    if pa.types.is_timestamp(target):
        converted = pd.to_datetime(text.where(present), format="ISO8601", errors="coerce")
        _refuse_other_layouts(text[present & converted.isna()], name)
        array = pa.array(converted.astype("datetime64[us]"), type=target, from_pandas=True)
    else:
        converted = pd.to_numeric(text.where(present), errors="coerce")
        array = pa.array(converted.to_numpy(dtype="float64"), from_pandas=True).cast(target)
    failed = (present & converted.isna()).to_numpy(dtype=bool)
    return array, failed
