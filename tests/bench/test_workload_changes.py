"""What the suite needs from the workloads: torchvision decoding (CPU, and the GPU path's
fallback without CUDA), the fp32 agreement metric, the warm-up batch, the fused cleanse."""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest

from workloads.cluster import local
from workloads.images import dataset, jpeg
from workloads.images import synthetic as synth


@pytest.fixture(scope="module")
def dogs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bench-data") / "dogs"
    synth.generate(root, breeds=3, images_per_breed=4, broken=True, seed=3)
    return root


@pytest.fixture(scope="module")
def client():
    from workloads.cluster.session import ClusterSession

    with ClusterSession.start_local(local.plan(2, device="cpu", threads_per_worker=1)) as session:
        yield session.client


def test_torchvision_decode_matches_the_pil_path(dogs):
    listing = dataset.list_dataset(str(dogs))
    files = list(listing.files)
    pil, pil_kept, pil_failed, pil_converted = dataset.load_batch(listing.images_dir, files, "imagenet")
    fast, kept, failed, converted = jpeg.load_batch(listing.images_dir, files, "imagenet", "cpu")
    assert kept == pil_kept and failed == pil_failed and converted == pil_converted
    assert fast.shape == pil.shape and fast.dtype == pil.dtype
    assert (fast - pil).abs().max().item() < 0.05  # one grey level is 1 / (255 * 0.225) = 0.017
    assert (fast - pil).abs().mean().item() < 1e-3


def test_resize_crop_is_torchvisions_recipe():
    import torch
    from torchvision.transforms.v2 import functional as F

    image = torch.randint(0, 256, (3, 300, 417), dtype=torch.uint8)
    expected = F.center_crop(F.resize(image, [256], antialias=True), [224]).float()
    assert (jpeg.resize_crop(image, 256, 224) - expected).abs().max().item() <= 1.0


def test_gpu_decode_falls_back_to_the_cpu_without_cuda(caplog):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with caplog.at_level(logging.WARNING, logger="workloads.images.jpeg"):
        assert jpeg.resolve("gpu", "cpu") == "cpu"
    assert "decoding on the CPU" in caplog.text
    assert jpeg.resolve("auto", "cpu") == "cpu" and jpeg.resolve("pil", "cuda") == "pil"
    with pytest.raises(ValueError, match="decode must be one of"):
        jpeg.resolve("nvdec", "cpu")


def test_clean_jpeg_test():
    assert jpeg.is_clean_jpeg(b"\xff\xd8\xff\xe0 data \xff\xd9")
    assert not jpeg.is_clean_jpeg(b"\xff\xd8\xff\xe0 truncated")
    assert not jpeg.is_clean_jpeg(b"\x89PNG\r\n\x1a\n")


def test_bf16_run_reports_agreement_with_fp32_and_gpu_decode_falls_back(client, dogs):
    from workloads.images import benchmark
    from workloads.runs.results import PhaseTimer

    config = benchmark.ImagesConfig(dataset_dir=str(dogs), model="workloads.images.synthetic:colour_classifier",
                                    batch_size=4, forward_batch=4, precision="bf16", decode="gpu",
                                    agreement_sample=5)
    timer = PhaseTimer()
    metrics = benchmark.run(client, config, timer)
    assert "agreement" in timer.phases and metrics["decoders"] == ["cpu"]
    assert metrics["agreement_images"] == 5
    assert metrics["top1_agreement_with_fp32"] == 1.0  # the colour classifier's margins are wide
    fp32 = benchmark.run(client, benchmark.ImagesConfig(dataset_dir=str(dogs), batch_size=4, forward_batch=4,
                                                        model="workloads.images.synthetic:colour_classifier"),
                         PhaseTimer())
    assert "top1_agreement_with_fp32" not in fp32 and fp32["decoders"] == ["cpu"]


def test_warm_up_uses_the_forward_batch():
    from workloads.images import model

    plugin = model.ModelPlugin(model.ModelSpec(model="workloads.images.synthetic:colour_classifier", warmup_batch=3))
    seen = []
    original = plugin.predict
    plugin.predict = lambda batch, **kw: seen.append(len(batch)) or original(batch, **kw)
    plugin.load_model(1)
    assert seen == [3]


def test_fused_cleanse_keeps_the_rule_counts():
    from workloads.taxi import benchmark, rules
    from workloads.taxi import schema as s

    frame = pd.DataFrame({name: pd.Series([1.0, 2.0, 3.0, 4.0], dtype="float32") for name in s.USED
                          if name not in (s.PICKUP, s.DROPOFF)})
    frame[s.PICKUP] = pd.to_datetime(["2019-01-01 10:00"] * 4).astype("datetime64[us]")
    frame[s.DROPOFF] = pd.to_datetime(["2019-01-01 10:30"] * 3 + ["2019-01-01 09:00"]).astype("datetime64[us]")
    frame.loc[0, s.FARE] = -1.0  # fare_not_positive
    selected = rules.select(rules.RULE_NAMES)
    labels = rules.label(frame, selected)
    clean, counts = benchmark.cleanse_partition((frame, {}), selected, s.TOTAL)
    assert counts == {i: int((labels == i).sum()) for i in range(len(selected) + 1) if (labels == i).any()}
    assert counts[rules.RULES.index(rules.select(["fare_not_positive"])[0]) + 1] == 1
    assert len(clean) == int((labels == rules.KEPT).sum()) == 2


def test_folded_batchnorm_gives_the_same_outputs_with_fewer_modules():
    import torch

    from workloads.images import model

    torch.manual_seed(0)
    net = model.build_model("resnet18")
    for module in net.modules():  # non-trivial running statistics, as trained weights have
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    folded, done = model.fold_batchnorm(net)
    assert done
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in net.modules())  # the original is left alone
    x = torch.randn(2, 3, 224, 224)
    with torch.inference_mode():
        expected, got = net(x), folded(x)
    assert torch.allclose(got, expected, rtol=1e-3, atol=1e-3 * expected.abs().max().item())
    assert (got.argmax(1) == expected.argmax(1)).all()


def test_a_model_torch_fx_cannot_trace_is_kept_unfolded(caplog):
    import torch

    from workloads.images import model

    class Branchy(torch.nn.Module):  # control flow on a tensor's value: not traceable
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return self.bn(self.conv(x)) if x.sum() > 0 else x

    net = Branchy().eval()
    with caplog.at_level(logging.INFO, logger="workloads.images.model"):
        kept, done = model.fold_batchnorm(net)
    assert kept is net and not done
    assert "cannot trace Branchy" in caplog.text


def test_a_model_without_batchnorm_is_returned_as_it_is():
    """Nothing to fold: the model itself comes back, not a trace of it (a trace would
    drop what its forward does beyond tensor operations)."""
    from workloads.images import model
    from workloads.images.synthetic import colour_classifier

    net = colour_classifier().eval()
    assert model.fold_batchnorm(net) == (net, False)


def test_no_fold_batchnorm_flag_reaches_the_config():
    import argparse

    from workloads.images import benchmark

    parser = argparse.ArgumentParser()
    benchmark.add_arguments(parser)
    folded = benchmark.make_config(parser.parse_args([]), {}, Path("/data"), "cpu")
    kept = benchmark.make_config(parser.parse_args(["--no-fold-batchnorm"]), {}, Path("/data"), "cpu")
    assert folded.fold_batchnorm and not kept.fold_batchnorm


def test_per_host_ranks_take_one_worker_per_host_with_all_its_threads(client):
    """Two local workers share one host: per-host makes one XGBoost rank of the first (in
    XGBoost's rank order) with both workers' threads; per-worker keeps both."""
    from workloads.taxi import training

    every = training.ranked_workers(client, None)
    assert len(every) == 2
    assert training.ranked_workers(client, None, per_host=True) == every[:1]
    assert training.host_threads(client, every[:1], None) == 2
    assert training.host_threads(client, every[:1], every[:1]) == 1  # a restricted run: its workers' threads only


def test_xgb_ranks_setting_is_checked_and_reaches_the_config():
    import argparse

    from workloads.taxi import settings

    parser = argparse.ArgumentParser()
    settings.add_arguments(parser)
    config = settings.make_config(parser.parse_args(["--xgb-ranks", "per-host"]), {}, "/data", "cpu")
    assert config.xgboost.ranks == "per-host"
    assert settings.make_config(parser.parse_args([]), {}, "/data", "cpu").xgboost.ranks == "per-worker"
    with pytest.raises(ValueError, match="--xgb-ranks must be one of"):
        settings.make_config(None, {"xgboost": {"ranks": "per-gpu"}}, "/data", "cpu")
