"""File discovery and reading, without a cluster: chunk boundaries, both schemas and
formats, every kind of bad file."""
from __future__ import annotations

import itertools
from io import StringIO
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from workloads.core.errors import DatasetError
from workloads.taxi import io
from workloads.taxi import schema as s
from workloads.taxi import synthetic as synth

from .support import UNPARSABLE, WRONG_FIELD_COUNT

HEADER_17 = ",".join(s.COLUMNS_2017)
LINE_17 = "1,2017-01-09 11:13:28,2017-01-09 11:25:45,1,3.30,1,N,263,161,1,12.5,0,0.5,2,0,0.3,15.3"


def read_all(path: Path, block_bytes: int) -> tuple[pa.Table, dict[str, int], list[io.FilePlan]]:
    plans = io.plan(str(path.parent.parent), path.name.rsplit(".", 1)[0], block_bytes)
    tables, problems = [], dict(plans[0].problems)
    for chunk in plans[0].chunks:
        result = io.read_chunk(chunk)
        tables.append(result.table)
        for reason, count in result.problems.items():
            problems[reason] = problems.get(reason, 0) + count
    table = pa.concat_tables(tables) if tables else s.empty_raw_table()
    return table, problems, plans


def test_chunks_own_every_line_exactly_once(tmp_path):
    path = tmp_path / "lines.csv"
    lines = [f"{i}," + "x" * (i % 7) for i in range(60)]
    path.write_bytes(("header\n" + "\r\n".join(lines) + "\r\n").encode())
    data_start = len("header\n")
    size = path.stat().st_size
    for block in range(1, 40):
        pieces = [io.read_range(path, start, min(start + block, size))
                  for start in range(data_start, size, block)]
        got = b"".join(pieces).decode().split("\r\n")
        assert got[:-1] == lines, f"block {block}"
    assert io.read_range(path, size - 1, size) == b""  # inside the last line's ending


def test_a_file_is_cut_into_chunks_of_equal_size(generated):
    """The fewest chunks of at most ``block_bytes``, within a byte of each other: cut every
    ``block_bytes`` instead, a file of 1.6 blocks gave one chunk of 1 block and one of 0.6,
    and the worker handed the large chunks of several files finished last."""
    path = generated / "yellow_tripdata_2017-06.csv"
    data_start = len(path.read_bytes().split(b"\n", 1)[0]) + 1
    data_bytes = path.stat().st_size - data_start
    for fraction in (0.62, 0.45, 0.3):
        block = int(data_bytes * fraction)
        (plan,) = io.plan(str(generated.parent), path.stem, block)
        sizes = [chunk.end - chunk.start for chunk in plan.chunks]
        assert len(sizes) == -(-data_bytes // block), (fraction, sizes)
        assert max(sizes) <= block and max(sizes) - min(sizes) <= 1, (fraction, sizes)
        assert plan.chunks[0].start == data_start and plan.chunks[-1].end == path.stat().st_size
        assert all(a.end == b.start for a, b in itertools.pairwise(plan.chunks))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    synth.generate(root, ["2017-06.csv", "2019-01.csv", "2019-05.csv", "2018-03.parquet"], 3000)
    return root / "taxi"


@pytest.mark.parametrize("name, schema", [
    ("yellow_tripdata_2017-06.csv", "17-column"), ("yellow_tripdata_2019-01.csv", "18-column"),
    ("yellow_tripdata_2018-03.parquet", "17-column+airport_fee")])
def test_every_row_read_typed_whatever_the_block_size(generated, name, schema):
    path = generated / name
    expected = (pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path))
    for block in (8_192, 100_000, 1 << 30):
        table, problems, plans = read_all(path, block)
        assert table.schema == s.RAW_SCHEMA
        assert table.num_rows == len(expected) and problems == {}
        assert plans[0].schema == schema
    assert len(plans[0].chunks) == 1
    fares = table.column(s.FARE).to_numpy()
    assert fares == pytest.approx(expected[s.FARE].to_numpy(), rel=1e-6)
    flags = table.column(s.STORE_AND_FWD).to_pandas()
    assert flags.isna().equals(expected[s.STORE_AND_FWD].isna())
    assert set(flags.dropna()) <= {0.0, 1.0}
    assert (flags == 1.0).sum() == (expected[s.STORE_AND_FWD] == "Y").sum()


def test_datetimes_parse_to_microseconds(generated):
    table, _, _ = read_all(generated / "yellow_tripdata_2017-06.csv", 1 << 30)
    expected = pd.read_csv(generated / "yellow_tripdata_2017-06.csv", parse_dates=[s.PICKUP])
    assert table.schema.field(s.PICKUP).type == pa.timestamp("us")
    assert (table.column(s.PICKUP).to_pandas() == expected[s.PICKUP]).all()


def test_january_2019_has_an_empty_congestion_column(generated):
    frame = pd.read_csv(generated / "yellow_tripdata_2019-01.csv")
    assert list(frame.columns) == list(s.COLUMNS_2019) and frame[s.CONGESTION].isna().all()
    assert pd.read_csv(generated / "yellow_tripdata_2019-05.csv")[s.CONGESTION].notna().all()


def test_malformed_lines_are_counted_and_dropped(tmp_path):
    from .support import damage_csv

    synth.generate(tmp_path, ["2019-07.csv"], 12_000)
    path = tmp_path / "taxi" / "yellow_tripdata_2019-07.csv"
    damage_csv(path)
    table, problems, _ = read_all(path, 300_000)  # several chunks, damage in more than one
    assert problems == {"wrong_field_count": len(WRONG_FIELD_COUNT),
                        "unparsable_value": len(UNPARSABLE)}
    assert table.num_rows == 12_000 - len(WRONG_FIELD_COUNT) - len(UNPARSABLE)
    assert table.schema == s.RAW_SCHEMA


@pytest.mark.parametrize("parse_block", [4_096, 65_536])
def test_small_parse_blocks_read_the_same_rows_and_count_the_same_damage(tmp_path, monkeypatch,
                                                                        parse_block):
    """The reader parses a chunk a block at a time (memory): lines and damage that
    straddle those blocks read exactly as with one block per chunk."""
    from .support import damage_csv

    synth.generate(tmp_path, ["2019-07.csv"], 12_000)
    path = tmp_path / "taxi" / "yellow_tripdata_2019-07.csv"
    damage_csv(path)
    whole, whole_problems, _ = read_all(path, 300_000)
    monkeypatch.setattr(io, "PARSE_BLOCK", parse_block)
    table, problems, _ = read_all(path, 300_000)
    assert table.column(s.FARE).num_chunks > 1  # really parsed in blocks
    assert problems == whole_problems and table.equals(whole)


def test_a_bad_value_in_a_parquet_text_column_is_unparsable(tmp_path):
    (tmp_path / "taxi").mkdir()
    frame = pd.read_csv(StringIO(HEADER_17 + "\n" + LINE_17 + "\n" + LINE_17 + "\n"),
                        dtype=str)
    frame.loc[1, s.FARE] = "twelve"
    frame.to_parquet(tmp_path / "taxi" / "yellow_tripdata_2017-01.parquet")
    table, problems, _ = read_all(tmp_path / "taxi" / "yellow_tripdata_2017-01.parquet", 1 << 20)
    assert problems == {"unparsable_value": 1} and table.num_rows == 1
    assert table.column(s.FARE).to_pylist() == [12.5]


@pytest.mark.parametrize("content, reason", [
    (b"", "empty_file"),
    ((HEADER_17 + "\n").encode(), "header_only"),
    ((HEADER_17 + "\r\n\r\n").encode(), "header_only"),
    (b"\xff\xfe\x00garbage\n1,2\n", "unreadable_file"),
    (("foo,bar\n" + "1,2\n").encode(), "missing_column"),
])
def test_file_level_problems(tmp_path, content, reason):
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    path.write_bytes(content)
    table, problems, plans = read_all(path, 1 << 20)
    assert reason in problems and table.num_rows == 0 and plans[0].chunks == []


def test_unknown_column_is_reported_and_ignored(tmp_path):
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    path.write_text(HEADER_17 + ",Surprise\n" + LINE_17 + ",9\n")
    table, problems, plans = read_all(path, 1 << 20)
    assert problems == {"unknown_column": 1} and plans[0].unknown_columns == ("Surprise",)
    assert table.num_rows == 1


def test_header_names_are_matched_without_regard_to_case(tmp_path):
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    path.write_text(HEADER_17.lower().replace("vendorid", '"VendorId"') + ",Airport_fee\n"
                    + LINE_17 + ",\n")
    table, problems, plans = read_all(path, 1 << 20)
    assert problems == {} and table.num_rows == 1
    assert plans[0].schema == "17-column+airport_fee"


def test_unreadable_parquet_is_reported(tmp_path):
    (tmp_path / "taxi").mkdir()
    (tmp_path / "taxi" / "yellow_tripdata_2017-01.parquet").write_bytes(b"PAR1 nope PAR1")
    _, problems, _ = read_all(tmp_path / "taxi" / "yellow_tripdata_2017-01.parquet", 1 << 20)
    assert problems == {"unreadable_file": 1}


def test_the_papers_directory_name_is_accepted(tmp_path):
    (tmp_path / "taxi-csv").mkdir()
    (tmp_path / "taxi-csv" / "yellow_tripdata_2017-01.csv").write_text(HEADER_17 + "\n" + LINE_17 + "\n")
    assert [p.name for p in io.find_files(tmp_path, "yellow_tripdata_*")] == ["yellow_tripdata_2017-01.csv"]


def test_taxi_wins_over_taxi_csv(tmp_path):
    for name in ("taxi", "taxi-csv"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"yellow_tripdata_{name}.csv").write_text(HEADER_17 + "\n")
    assert [p.parent.name for p in io.find_files(tmp_path, "yellow_tripdata_*")] == ["taxi"]


def test_missing_directory_names_both_candidates(tmp_path):
    with pytest.raises(DatasetError) as caught:
        io.find_files(tmp_path / "absent", "yellow_tripdata_*")
    root = tmp_path / "absent"
    assert str(caught.value) == f"no taxi data directory: neither {root}/taxi or {root}/taxi-csv exists"


def test_no_match_names_the_directory_and_the_patterns(tmp_path):
    (tmp_path / "taxi").mkdir()
    (tmp_path / "taxi" / "yellow_tripdata_2017-01.csv.gz").write_bytes(b"")
    with pytest.raises(DatasetError) as caught:
        io.find_files(tmp_path, "yellow_tripdata_2018-*")
    assert str(caught.value) == (f"no files matching yellow_tripdata_2018-*.csv or yellow_tripdata_2018-*.parquet"
                                 f" in {tmp_path / 'taxi'}")


# --- I/O errors: retried from the chunk's start, then the read fails; never rows dropped ---

def _failing_reads(monkeypatch, failures: int | None, after_calls: int = 1) -> list[int]:
    """Make ``_RangeStream.readinto`` raise EIO (what a read(2) on an NFS soft mount
    returns when the server stops answering) on its ``after_calls``-th call of an
    attempt, for the first ``failures`` attempts (None: every attempt). Returns the list
    of attempts that failed, for the test to inspect."""
    import errno

    real = io._RangeStream.readinto
    failed: list[int] = []
    calls = {"n": 0}

    def readinto(self, buffer):
        calls["n"] += 1
        if calls["n"] % (after_calls + 1) == 0 and (failures is None or len(failed) < failures):
            failed.append(calls["n"])
            calls["n"] = 0
            raise OSError(errno.EIO, "Input/output error")
        return real(self, buffer)

    monkeypatch.setattr(io._RangeStream, "readinto", readinto)
    monkeypatch.setattr(io, "READ_BACKOFF_S", 0.0, raising=False)
    monkeypatch.setattr(io, "PARSE_BLOCK", 4_096)  # several reads per chunk: fail mid-chunk
    return failed


def test_an_io_error_mid_chunk_is_retried_and_every_row_read(generated, monkeypatch, caplog):
    path = generated / "yellow_tripdata_2017-06.csv"
    whole, whole_problems, _ = read_all(path, 100_000)
    failed = _failing_reads(monkeypatch, failures=2, after_calls=3)
    with caplog.at_level("WARNING", logger=io.__name__):
        table, problems, plans = read_all(path, 100_000)
    assert len(failed) == 2  # two attempts of the first chunk failed after reading part of it
    assert problems == whole_problems == {} and table.num_rows == whole.num_rows
    assert table.equals(whole)  # a retry starts over: nothing read twice, nothing missing
    first = plans[0].chunks[0]
    retried = [r.getMessage() for r in caplog.records if "I/O error" in r.getMessage()]
    assert len(retried) == 2
    assert all(f"{path} [bytes {first.start}-{first.end}]: I/O error" in m for m in retried)
    assert "attempt 1 of 4" in retried[0] and "attempt 2 of 4" in retried[1]


def test_an_io_error_on_every_attempt_fails_naming_the_file_and_byte_range(generated, monkeypatch):
    path = generated / "yellow_tripdata_2017-06.csv"
    plans = io.plan(str(generated.parent), path.stem, 100_000)
    chunk = plans[0].chunks[1]
    failed = _failing_reads(monkeypatch, failures=None)
    with pytest.raises(DatasetError) as caught:
        io.read_chunk(chunk)
    assert len(failed) == 4 == io.READ_ATTEMPTS
    message = str(caught.value)
    assert message.startswith(f"{path} [bytes {chunk.start}-{chunk.end}]: I/O error on each of 4 attempts")
    assert "Input/output error" in message and "without these rows" in message


def test_a_parquet_read_that_keeps_failing_names_the_row_groups(generated, monkeypatch):
    import errno

    import pyarrow.parquet as pq

    path = generated / "yellow_tripdata_2018-03.parquet"
    chunk = io.plan(str(generated.parent), path.stem, 1 << 20)[0].chunks[0]

    def read_row_groups(self, *args, **kwargs):
        raise OSError(errno.ESTALE, "Stale file handle")

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", read_row_groups)
    monkeypatch.setattr(io, "READ_BACKOFF_S", 0.0, raising=False)
    with pytest.raises(DatasetError, match=r"row groups \[0\]\]: I/O error on each of 4 attempts.*Stale file"):
        io.read_chunk(chunk)


def test_an_io_error_while_planning_is_retried_not_reported_as_a_bad_file(generated, monkeypatch):
    """Reading the Parquet footer hit EIO once: the file is planned, not 'unreadable_file'."""
    import errno

    import pyarrow.parquet as pq

    real, calls = pq.ParquetFile.__init__, []

    def flaky_init(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "__init__", flaky_init)
    monkeypatch.setattr(io, "READ_BACKOFF_S", 0.0, raising=False)
    plans = io.plan(str(generated.parent), "yellow_tripdata_2018-03", 1 << 20)
    assert plans[0].problems == {} and len(plans[0].chunks) == 1 and len(calls) >= 2


def test_bytes_that_are_not_utf8_drop_only_their_line(tmp_path):
    """Bytes that are not UTF-8 in a number column: that line is one unparsable value;
    the chunk's other lines are read (the parser used to reject the whole chunk as text,
    "CSV conversion error to string: invalid UTF8 data", and drop its lines)."""
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    bad = LINE_17.replace("12.5", "12\xff5").encode("latin-1")
    path.write_bytes((HEADER_17 + "\n").encode() + (LINE_17 + "\n").encode() * 9 + bad + b"\n")
    table, problems, _ = read_all(path, 1 << 20)
    assert problems == {"unparsable_value": 1} and table.num_rows == 9


def test_a_block_the_parser_rejects_counts_every_line_it_drops(tmp_path, monkeypatch):
    """Whatever makes the parser reject a chunk as a whole, its lines are counted one by
    one under ``unreadable_chunk``, not as one chunk."""
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    path.write_bytes((HEADER_17 + "\n" + (LINE_17 + "\n") * 7).encode())

    def rejected(*args):
        raise pa.ArrowInvalid("CSV parse error: Expected 17 columns, got 3")  # pyarrow's wording

    monkeypatch.setattr(io, "_read_csv", rejected)
    table, problems, _ = read_all(path, 1 << 20)
    assert table.num_rows == 0 and problems == {"unreadable_chunk": 7}


def test_the_flag_reads_the_same_on_the_fast_path_and_the_text_path(tmp_path):
    """Y/N exactly are parsed as booleans with the numbers; any other spelling sends the
    chunk to the text path, where the flag is trimmed and anything but Y/N is unparsable
    (that row dropped and counted), so both paths give the same typed values."""
    def flagged(flags: list[str]) -> str:
        return HEADER_17 + "\n" + "".join(LINE_17.replace(",N,", f",{flag},") + "\n" for flag in flags)

    taxi = tmp_path / "taxi"
    taxi.mkdir()
    (taxi / "yellow_tripdata_2017-01.csv").write_text(flagged(["Y", "N", "", "Y"]))
    (taxi / "yellow_tripdata_2017-02.csv").write_text(flagged(["Y", "N", "", " Y", "maybe"]))
    fast, fast_problems, _ = read_all(taxi / "yellow_tripdata_2017-01.csv", 1 << 20)
    text, text_problems, _ = read_all(taxi / "yellow_tripdata_2017-02.csv", 1 << 20)
    as_list = [None if pd.isna(v) else v for v in fast.column(s.STORE_AND_FWD).to_pylist()]
    assert as_list == [1.0, 0.0, None, 1.0] and not fast_problems
    assert [None if pd.isna(v) else v for v in text.column(s.STORE_AND_FWD).to_pylist()] == as_list
    assert text_problems == {"unparsable_value": 1}
    assert fast.schema == text.schema == s.RAW_SCHEMA


def _as_a_spreadsheet_saves_it(source: Path, target: Path) -> None:
    """The month re-saved by a spreadsheet program: datetimes as ``M/D/YYYY H:MM``."""
    frame = pd.read_csv(source, parse_dates=[s.PICKUP, s.DROPOFF])
    for column in (s.PICKUP, s.DROPOFF):
        when = frame[column]
        frame[column] = (when.dt.month.astype(str) + "/" + when.dt.day.astype(str) + "/"
                         + when.dt.year.astype(str) + " " + when.dt.hour.astype(str) + ":"
                         + when.dt.strftime("%M"))
    frame.to_csv(target, index=False)


def test_a_file_with_spreadsheet_dates_is_refused_naming_column_format_and_value(generated, tmp_path):
    """Every datetime in another layout: the read fails naming the file, the column, the
    TLC's format and a value, instead of counting each line unparsable and training on
    the other files."""
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2019-01.csv"
    _as_a_spreadsheet_saves_it(generated / "yellow_tripdata_2019-01.csv", path)
    first = path.read_text().splitlines()[1].split(",")[1]
    assert "/" in first and first.count(":") == 1  # e.g. 1/1/2019 0:46
    with pytest.raises(io.TimestampFormatError) as error:
        read_all(path, 1 << 20)
    assert str(error.value) == (
        f"{path}: column tpep_pickup_datetime holds dates in another format than the TLC's"
        f" YYYY-MM-DD HH:MM:SS, e.g. {first!r} (a file re-saved by a spreadsheet program?);"
        " refusing the file rather than dropping its rows: use the TLC's file")


@pytest.mark.parametrize("value, outcome", [
    ("1/1/2019 0:46", "refused"), ("01.01.2019 00:46:40", "refused"), ("01-31-2019 00:46", "refused"),
    ("2019/01/01 00:46:40", "read"), ("2019.01.01 00:46:40", "read"),
    ("2019-01-32 10:00:00", "unparsable"), ("not a date", "unparsable"), ("12", "unparsable"),
    ("2019-13-01 00:00:00", "unparsable")])
def test_only_a_date_laid_out_otherwise_refuses_the_file(tmp_path, value, outcome):
    """Month or day first refuses the file; the year first with another separator is read
    (unambiguous); a damaged value in the TLC's layout, or no date, is one unparsable line."""
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    bad = LINE_17.replace("2017-01-09 11:25:45", value)
    path.write_text(HEADER_17 + "\n" + (LINE_17 + "\n") * 9 + bad + "\n")
    if outcome == "refused":
        with pytest.raises(io.TimestampFormatError, match=f"column tpep_dropoff_datetime .* e.g. {value!r}"):
            read_all(path, 1 << 20)
        return
    table, problems, _ = read_all(path, 1 << 20)
    if outcome == "read":
        assert problems == {} and table.num_rows == 10
        assert table[s.DROPOFF][9].as_py().isoformat() == "2019-01-01T00:46:40"
    else:
        assert problems == {"unparsable_value": 1} and table.num_rows == 9
