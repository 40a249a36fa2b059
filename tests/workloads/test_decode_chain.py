"""The JPEG decoder fallback chain (workloads.images.decoders), on the CPU.

Which chain a worker gets is decided from an injected ``Availability``. The GPU backends
are replaced by local fakes where this machine has no GPU; each fake does what the real
one does, from its documentation:

* nvImageCodec's batched ``Decoder.decode`` "returns a list of decoded Images; there is
  None in the returned list on positions which could not be decoded" and does not raise
  for one bad image (nvImageCodec Python API, ``Decoder.decode``; python/decoder.cpp at
  NVIDIA/nvImageCodec 36b4ee8);
* its hardware backend decodes baseline JPEGs only: "Hardware acceleration for baseline
  JPEG decode on supported platforms" (nvJPEG documentation, 1.1 nvJPEG Decoder), so a
  progressive JPEG comes back None from a ``HW_GPU_ONLY`` decoder;
* a backend whose library or device fails raises on every call (a CUDA error).

The fakes decode what they accept with the real torchvision CPU decoder, so pixels and
shapes are real.
"""
from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from workloads.images import dataset, decoders, jpeg
from workloads.images import synthetic as synth
from workloads.images.decoders import Availability, BatchDecoder, choose_chain

ALL_GPU = Availability(cuda=True, torchvision_cuda=True, nvimgcodec_version="0.9.0",
                       nvimgcodec_kinds=frozenset(decoders.NVIMGCODEC_KINDS))


def jpeg_bytes(progressive: bool = False, size=(64, 48), colour=(200, 40, 40)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="JPEG", quality=90, progressive=progressive)
    return buffer.getvalue()


def is_progressive(data: bytes) -> bool:
    return b"\xff\xc2" in data  # SOF2: progressive DCT


def real_cpu(batch):
    return decoders.make_backend("torchvision-cpu")(batch)


def fake_hardware(batch):
    """HW_GPU_ONLY: None for progressive JPEGs, the others decoded; grayscale ones None
    too, as the real backend sends three-channel streams only (decoders._nvimgcodec_backend)."""
    outputs = real_cpu(batch)
    return [None if is_progressive(data) or image is None or image.shape[0] != 3 else image
            for data, image in zip(batch, outputs, strict=True)]


def broken_backend(batch):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


# ----------------------------------------------------------------------------- choosing the chain
def test_cpu_worker_decodes_on_the_cpu_alone():
    assert choose_chain("cpu", ALL_GPU) == ("torchvision-cpu",)


def test_gpu_worker_with_every_backend_tries_hardware_then_cuda_then_cpu():
    assert choose_chain("cuda", ALL_GPU) == ("nvimgcodec-hw", "nvimgcodec-cuda", "nvimgcodec-hybrid",
                                             "torchvision-cuda", "torchvision-cpu")


def test_gpu_without_jpeg_engines_starts_on_the_cuda_cores():
    no_engines = Availability(cuda=True, torchvision_cuda=True, nvimgcodec_version="0.9.0",
                              nvimgcodec_kinds=frozenset({"nvimgcodec-cuda", "nvimgcodec-hybrid"}),
                              reasons={"nvimgcodec-hw": "decoded nothing from a baseline JPEG"})
    assert choose_chain("cuda", no_engines)[0] == "nvimgcodec-cuda"
    assert "nvimgcodec-hw" not in choose_chain("cuda", no_engines)


def test_gpu_without_nvimgcodec_uses_torchvision_on_the_gpu():
    plain = Availability(cuda=True, torchvision_cuda=True,
                         reasons=dict.fromkeys(decoders.NVIMGCODEC_KINDS, "nvidia.nvimgcodec does not import"))
    assert choose_chain("cuda", plain) == ("torchvision-cuda", "torchvision-cpu")


def test_cuda_requested_without_cuda_falls_back_to_the_cpu():
    assert choose_chain("cuda", Availability()) == ("torchvision-cpu",)


def test_one_backend_for_the_decode_only_rate_and_a_missing_one_named():
    assert choose_chain("cuda", ALL_GPU, only="nvimgcodec-cuda") == ("nvimgcodec-cuda", "torchvision-cpu")
    plain = Availability(cuda=True, torchvision_cuda=True, reasons={"nvimgcodec-hw": "no such engine on this GPU"})
    with pytest.raises(ValueError, match="'nvimgcodec-hw' is not available: no such engine on this GPU"):
        choose_chain("cuda", plain, only="nvimgcodec-hw")
    with pytest.raises(ValueError, match="decoder backend must be one of"):
        choose_chain("cuda", ALL_GPU, only="nvdec")


def test_detect_on_a_machine_without_cuda_says_why():
    found = decoders.detect("cuda")
    if found.cuda:
        pytest.skip("this machine has CUDA")
    assert found.has("torchvision-cpu") and not found.has("nvimgcodec-hw")
    assert found.reasons["nvimgcodec-hw"] == "torch.cuda.is_available() is False"


def test_probe_for_the_preflight_reports_the_chain_and_what_is_missing():
    report = decoders.probe("cuda", found=Availability(cuda=True, torchvision_cuda=True,
                                                       reasons={"nvimgcodec-hw": "nvidia.nvimgcodec does not import"}))
    assert report["chain"] == ["torchvision-cuda", "torchvision-cpu"] and report["ok"] is True
    assert report["hardware_decoder"] is False
    assert report["missing"] == {"nvimgcodec-hw": "nvidia.nvimgcodec does not import"}
    assert decoders.probe("cuda", found=Availability())["ok"] is False  # a GPU worker decoding on its CPU
    assert decoders.probe("cpu", found=Availability())["ok"] is True


# ----------------------------------------------------------------------------- falling back per image
def test_images_the_hardware_rejects_go_to_the_next_backend_and_are_counted():
    baseline, progressive = jpeg_bytes(), jpeg_bytes(progressive=True, colour=(10, 200, 10))
    garbage = b"\xff\xd8\xff\xe0" + b"\x00" * 64 + b"\xff\xd9"  # looks like a JPEG, decodes nowhere
    decoder = BatchDecoder(["nvimgcodec-hw", "torchvision-cpu"],
                           backends={"nvimgcodec-hw": fake_hardware, "torchvision-cpu": real_cpu})
    images, used = decoder.decode({0: baseline, 1: progressive, 2: garbage, 3: baseline})
    assert used == {0: "nvimgcodec-hw", 1: "torchvision-cpu", 3: "nvimgcodec-hw"}
    assert sorted(images) == [0, 1, 3] and tuple(images[1].shape) == (3, 48, 64)
    assert images[1][1].float().mean().item() > 150  # the green image, decoded by the CPU
    assert decoder.counts == {"nvimgcodec-hw": 2, "torchvision-cpu": 1}


def test_a_failing_backend_is_dropped_with_a_warning_and_never_fatal(caplog):
    decoder = BatchDecoder(["nvimgcodec-cuda", "torchvision-cpu"],
                           backends={"nvimgcodec-cuda": broken_backend, "torchvision-cpu": real_cpu})
    with caplog.at_level(logging.WARNING, logger="workloads.images.decoders"):
        _images, used = decoder.decode({0: jpeg_bytes(), 1: jpeg_bytes()})
    assert used == {0: "torchvision-cpu", 1: "torchvision-cpu"}
    assert decoder.chain == ["torchvision-cpu"]
    assert decoder.dropped == {"nvimgcodec-cuda": "RuntimeError: CUDA error: an illegal memory access was encountered"}
    assert "decoder backend nvimgcodec-cuda failed" in caplog.text
    decoder.decode({0: jpeg_bytes()})  # not tried again
    assert decoder.counts == {"torchvision-cpu": 3}


def test_an_empty_chain_is_refused():
    with pytest.raises(ValueError, match="non-empty sequence"):
        BatchDecoder([])
    with pytest.raises(ValueError, match="must be one of"):
        decoders.make_backend("nvdec")


# ----------------------------------------------------------------------------- through the batch loader
@pytest.fixture(scope="module")
def dogs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("decode") / "dogs"
    synth.generate(root, breeds=3, images_per_breed=4, broken=True, seed=11)
    return root


def test_every_file_is_decoded_or_reported_and_counted_per_backend(dogs):
    listing = dataset.list_dataset(str(dogs))
    files = list(listing.files)
    decoder = BatchDecoder(["nvimgcodec-hw", "torchvision-cpu"],
                           backends={"nvimgcodec-hw": fake_hardware, "torchvision-cpu": real_cpu})
    loaded = jpeg.decode_batch(jpeg.read_batch(listing.images_dir, files), "imagenet", "cpu", decoder=decoder)
    failed = {name for name, _ in loaded.failed}
    assert sorted(loaded.kept + sorted(failed)) == sorted(files) and not set(loaded.kept) & failed
    assert len(failed) == len(synth.FAILED_KINDS)
    assert dict(loaded.converted).values() and sorted(dict(loaded.converted).values()) == ["CMYK", "L", "PNG"]
    # baseline RGB files on the "hardware", the grayscale one on the CPU, CMYK and PNG by PIL
    assert loaded.backends == {"nvimgcodec-hw": 12, "torchvision-cpu": 1, "pil": 2}
    assert sum(loaded.backends.values()) == len(loaded.kept) == loaded.batch.shape[0]


def test_the_pooled_default_decoder_matches_the_pil_path(dogs):
    listing = dataset.list_dataset(str(dogs))
    files = list(listing.files)
    pil, pil_kept, pil_failed, _ = dataset.load_batch(listing.images_dir, files, "imagenet")
    fast, kept, failed, _ = jpeg.load_batch(listing.images_dir, files, "imagenet", "cpu")
    assert kept == pil_kept and failed == pil_failed
    assert (fast - pil).abs().max().item() < 0.05  # one grey level is 1 / (255 * 0.225) = 0.017


def test_same_sized_images_are_resized_together_exactly_as_one_by_one():
    import torch

    generator = torch.Generator().manual_seed(0)
    shapes = [(300, 417), (417, 300), (300, 417), (256, 256), (300, 417)]
    images = [torch.randint(0, 256, (3, *shape), dtype=torch.uint8, generator=generator) for shape in shapes]
    together = jpeg.resize_crop_many(images, 256, 224)
    one_by_one = torch.stack([jpeg.resize_crop(image, 256, 224) for image in images])
    assert together.shape == (5, 3, 224, 224)
    assert torch.equal(together, one_by_one)


@pytest.mark.gpu
def test_on_a_gpu_the_chain_starts_on_the_gpu_and_matches_the_cpu(dogs):
    found = decoders.detect("cuda")
    chain = choose_chain("cuda", found)
    assert chain[0] != "torchvision-cpu", found.reasons
    listing = dataset.list_dataset(str(dogs))
    files = list(listing.files)
    gpu, kept, failed, _ = jpeg.load_batch(listing.images_dir, files, "imagenet", "cuda")
    cpu, cpu_kept, cpu_failed, _ = jpeg.load_batch(listing.images_dir, files, "imagenet", "cpu")
    assert kept == cpu_kept and failed == cpu_failed
    assert (gpu.cpu() - cpu).abs().mean().item() < 0.02


# ----------------------------------------------------------------------------- the real nvImageCodec, on the CPU
def test_the_nvimgcodec_adapter_with_the_real_library_on_the_cpu(dogs):
    """``nvidia-nvimgcodec-cu13``'s CPU_ONLY backend runs without a GPU: the same adapter
    the GPU kinds use (CodeStreams, the batched decode with None for what it cannot
    decode, DLPack to torch), with the real library."""
    pytest.importorskip("nvidia.nvimgcodec")
    found = decoders.detect("cpu")
    assert found.has("nvimgcodec-cpu"), found.reasons
    assert choose_chain("cpu", found) == ("torchvision-cpu",)  # never in the CPU path's own chain
    listing = dataset.list_dataset(str(dogs))
    files = list(listing.files)
    raw = jpeg.read_batch(listing.images_dir, files)
    garbage = len(files)
    raw.raw[garbage] = b"\xff\xd8\xff\xe0" + b"\x00" * 64 + b"\xff\xd9"
    decoder = BatchDecoder(choose_chain("cpu", found, only="nvimgcodec-cpu"))
    images, used = decoder.decode(raw.raw)
    assert garbage not in images  # None from nvImageCodec, rejected by torchvision too: left to the caller
    kinds = {i: synth_kind(dogs, name) for i, name in enumerate(files)}
    assert {i for i, name in used.items() if name == "nvimgcodec-cpu"} == {i for i, k in kinds.items() if k == "rgb"}
    # one channel, and four (CMYK: the batch loader sends those to PIL, which reports them)
    assert {kinds[i] for i, name in used.items() if name == "torchvision-cpu"} == {"grayscale", "cmyk"}
    reference, _ = BatchDecoder(["torchvision-cpu"]).decode({i: raw.raw[i] for i in used})
    for i in used:
        assert images[i].shape == reference[i].shape and images[i].dtype == reference[i].dtype
        assert (images[i].int() - reference[i].int()).abs().float().mean().item() < 1.0  # both libjpeg-turbo


def synth_kind(dogs: Path, name: str) -> str:
    import json

    return json.loads((dogs / synth.MANIFEST).read_text())["files"][name]["kind"]


def test_the_preflight_flags_a_gpu_worker_that_would_decode_on_its_cpu():
    no_gpu_decoding = Availability(cuda=True,
                                   reasons=dict.fromkeys(decoders.NVIMGCODEC_KINDS, "nvidia.nvimgcodec does not import")
                                   | {"torchvision-cuda": "RuntimeError: nvjpeg not built"})
    reports = {"tcp://10.0.0.1:1": decoders.probe("cuda", ALL_GPU),
               "tcp://10.0.0.2:1": decoders.probe("cuda", no_gpu_decoding),
               "tcp://10.0.0.3:1": decoders.probe("cpu", Availability())}
    problems = decoders.preflight_problems(reports)
    assert list(problems) == ["tcp://10.0.0.2:1"]
    [problem] = problems["tcp://10.0.0.2:1"]
    assert problem.startswith("GPU worker would decode JPEGs on its CPU only (nvimgcodec-hw: nvidia.nvimgcodec")
    assert "torchvision-cuda: RuntimeError: nvjpeg not built" in problem
