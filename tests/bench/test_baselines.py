"""Each baseline runs the way its Dask side does: the same decoder, folding, allocator and
threads (images), the same columns and types (pyarrow), the same rows, parameters and
environment (XGBoost). Read from what the bench records about each side's own process
after a real (small) measurement, not from the bench's constants."""
from __future__ import annotations

import pytest

from bench import registry, suite
from workloads.taxi import rules

pytestmark = pytest.mark.slow

IMAGES = ["images_pipeline_vs_model", "images_dask_vs_plain_loop", "images_dask_vs_naive_loop",
          "images_scaling_2x1_vs_1x1"]
TAXI = ["taxi_load_vs_pyarrow", "taxi_train_dask_vs_single", "taxi_peak_memory_vs_frame",
        "taxi_scale_default_vs_quick"]
TAXI_SIZE = {"files": ["2017-03.csv", "2018-03.csv"], "noise_sd": 1.0, "invalid_fraction": 0.03}


def small_profiles() -> dict[str, dict]:
    images = {"generate": {"breeds": 2, "images_per_breed": 4, "broken": False, "seed": 0, "min_size": 240,
                           "max_size": 300, "noise": 20},
              "model": "resnet18", "batch_size": 4, "forward_batch": 2}
    taxi = {"block_mib": 1, "num_boost_round": 5, "xgboost_ranks": "per-host"}
    return {"quick": {"repeats": 1, "workers": None, "images": images,
                      "taxi": {**taxi, "generate": {**TAXI_SIZE, "rows_per_file": 8000}}},
            "default": {"repeats": 1, "workers": None, "images": images,
                        "taxi": {**taxi, "generate": {**TAXI_SIZE, "rows_per_file": 16000}}}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{figure name: its record} of one small run of the image baselines and the taxi figures."""
    root = tmp_path_factory.mktemp("bench")
    profiles = small_profiles()
    ctx = registry.Context("quick", profiles["quick"], 1, root / "quick", echo=lambda text: None, profiles=profiles,
                           data_root=root)
    figures = suite.measure(ctx, IMAGES + TAXI)
    records = {figure.name: figure.as_dict() for figure in figures}
    for name, record in records.items():
        assert record["error"] is None, f"{name}: {record['error']}"
    return records


def _one(values):
    assert len(set(values)) == 1, values
    return values[0]


def _dask_allocator(sides):
    return _one([facts["allocator"] for facts in sides["dask"]["workers"].values()])


def _dask_trim(sides):
    return _one([facts["MALLOC_TRIM_THRESHOLD_"] for facts in sides["dask"]["workers"].values()])


def test_tuned_loop_decodes_folds_and_allocates_as_the_workers(recorded):
    sides = recorded["images_dask_vs_plain_loop"]["notes"]["sides"]
    dask, tuned = sides["dask"], sides["tuned"]
    assert dask["decoders"] == [tuned["decoder"]] and tuned["decoder"] != "pil"
    assert dask["batchnorm_folded"] is True and tuned["batchnorm_folded"] is True
    assert tuned["process"]["allocator"] == _dask_allocator(sides)
    assert tuned["process"]["MALLOC_TRIM_THRESHOLD_"] == _dask_trim(sides)
    # one process with all the workers' threads together
    assert tuned["threads"] == len(dask["workers"]) * _one(dask["torch_threads"])


def test_naive_loop_is_the_papers_notebook(recorded):
    sides = recorded["images_dask_vs_naive_loop"]["notes"]["sides"]
    naive = sides["naive"]
    assert naive["decoder"] == "pil" and naive["batchnorm_folded"] is False
    assert naive["process"]["allocator"] == "glibc" and naive["process"]["MALLOC_TRIM_THRESHOLD_"] is None


def test_scaling_compares_two_workers_with_one_of_them_and_records_its_ceiling(recorded):
    """The one-worker side is one of the two-worker side's workers (a run restricted to it),
    so the same scheduler and idle processes are behind both; the ceiling is the tuned loop's
    code in two plain one-thread processes with the workers' environment and decoder."""
    record = recorded["images_scaling_2x1_vs_1x1"]
    sides, ceiling = record["notes"]["sides"], record["notes"]["ceiling"]
    two, one = sides["two"], sides["one"]
    assert len(two["workers"]) == 2 and one["cluster_workers"] == 2
    assert list(one["workers"]) == [min(two["workers"])]
    assert one["torch_threads"] == [1] and two["torch_threads"] == [1]
    assert one["decoders"] == two["decoders"] == sides["ceiling"]["decoders"]
    processes = sides["ceiling"]["processes"]
    assert len(processes) == 2
    for process in processes:
        assert process["threads"] == 1 and process["batchnorm_folded"] is True
        assert process["allocator"] == _one([facts["allocator"] for facts in two["workers"].values()])
    assert len(ceiling["ratios"]) == len(record["ratios"]) == 1
    two_rate, one_rate = ceiling["two_images_per_second"][0], ceiling["one_images_per_second"][0]
    assert ceiling["ratios"][0] == pytest.approx(two_rate / one_rate, abs=0.01)


def test_limit_is_the_workers_model_warmed_at_the_forward_batch(recorded):
    record = recorded["images_pipeline_vs_model"]
    sides, notes = record["notes"]["sides"], record["notes"]
    processes = sides["limit"]["processes"]
    assert len(processes) == len(sides["dask"]["workers"])
    for process in processes:
        assert process["warmup_batch"] == notes["forward_batch"]
        assert process["batchnorm_folded"] is sides["dask"]["batchnorm_folded"] is True
        assert process["threads"] == _one(sides["dask"]["torch_threads"])
        assert process["allocator"] == _dask_allocator(sides)
        assert process["MALLOC_TRIM_THRESHOLD_"] == _dask_trim(sides)


def test_pyarrow_reads_the_readers_columns_and_types(recorded):
    record = recorded["taxi_load_vs_pyarrow"]
    dask, read = record["notes"]["sides"]["dask"]["reader_columns"], record["notes"]["sides"]["read"]
    assert list(read["columns"]) == list(dask)  # the same columns, in the same order
    flag = "store_and_fwd_flag"  # parsed as text, then mapped to 1.0/0.0 by the reader
    assert {k: v for k, v in read["columns"].items() if k != flag} == {k: v for k, v in dask.items() if k != flag}
    assert read["rows"] == record["notes"]["rows_raw"]
    assert read["threads"] == record["notes"]["threads"]


def test_load_ceiling_runs_the_tasks_work_in_plain_processes_on_the_same_chunks(recorded):
    """The load figure's ceiling: the load and cleanse tasks' functions in one plain process
    per worker thread with the workers' environment, on the Dask side's chunks and rules,
    measured in the same repetitions as the figure."""
    record = recorded["taxi_load_vs_pyarrow"]
    sides, ceiling = record["notes"]["sides"], record["notes"]["ceiling"]
    assert sides["ceiling"]["chunks"] == sides["dask"]["chunks"] > 1
    assert sides["ceiling"]["rules"] == [rule.name for rule in rules.select(rules.RULE_NAMES)]
    processes = sides["ceiling"]["processes"]
    assert len(processes) == record["notes"]["threads"]
    for process in processes:
        assert process["allocator"] == _dask_allocator(sides)
        assert process["MALLOC_TRIM_THRESHOLD_"] == _dask_trim(sides)
    assert len(ceiling["ratios"]) == len(record["ratios"]) == 1
    baseline = record["denominator"]["samples"][0]
    work_rate = ceiling["rows_per_second"][0]
    assert ceiling["ratios"][0] == pytest.approx(work_rate / baseline, abs=0.01)


def test_load_limit_adds_dasks_fixed_cost_measured_on_the_same_graph(recorded):
    """Dask's fixed cost is measured by the benchmark's own load + cleanse on files of the same
    names and chunk count with fewer rows, in the same repetitions; the limit adds it to the
    ceiling's time."""
    record = recorded["taxi_load_vs_pyarrow"]
    notes, sides = record["notes"], record["notes"]["sides"]
    floor = sides["floor"]
    assert floor["chunks"] == sides["dask"]["chunks"] and floor["rows_raw"] < notes["rows_raw"]
    assert floor["block_mib"] == 1 and len(floor["no_op_round_trip_s"]) == 5
    limit = notes["with_dask_fixed_cost"]
    fixed, work_rate = limit["fixed_seconds"][0], notes["ceiling"]["rows_per_second"][0]
    assert fixed > 0
    expected = notes["rows_raw"] / (notes["rows_raw"] / work_rate + fixed) / record["denominator"]["samples"][0]
    assert limit["ratios"][0] == pytest.approx(expected, abs=0.01)
    assert limit["ratios"][0] < notes["ceiling"]["ratios"][0]


def test_single_xgboost_trains_on_the_dask_sides_rows_with_its_environment(recorded):
    record = recorded["taxi_train_dask_vs_single"]
    dask, single = record["notes"]["sides"]["dask"], record["notes"]["sides"]["single"]
    assert single["rows"] == dask["training_rows"] == record["notes"]["rows_train"]
    assert single["rows_digest"] == dask["training_rows_digest"]
    assert single["columns"] == dask["training_columns"]
    assert single["params"]["nthread"] == record["notes"]["threads"] == dask["xgboost_rank_nthread"]
    assert dask["xgboost_ranks"] == 1  # one host: one rank with all its workers' threads
    assert single["allocator"] == _dask_allocator(record["notes"]["sides"])
    assert single["MALLOC_TRIM_THRESHOLD_"] == _dask_trim(record["notes"]["sides"])


def test_peak_memory_covers_the_whole_run(recorded):
    record = recorded["taxi_peak_memory_vs_frame"]
    phases = record["notes"]["sides"]["dask"]["phases"]
    assert list(phases) == ["load", "cleanse", "split", "train", "infer", "evaluate"]
    assert record["numerator"]["value"] > 0 and record["denominator"]["value"] > 0


def test_scale_figure_reads_both_sizes_with_the_same_settings(recorded):
    sides = recorded["taxi_scale_default_vs_quick"]["notes"]["sides"]
    assert sides["default"]["rows_raw"] == 2 * sides["quick"]["rows_raw"] > 0
    assert sides["default"]["block_mib"] == sides["quick"]["block_mib"]
    assert sides["default"]["partitions"] > sides["quick"]["partitions"]
