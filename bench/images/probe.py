"""A classifier head fitted to the benchmark's own images, for the reduced-precision
agreement figure.

With random weights a ResNet predicts the same class for nearly every image, so "bf16
agrees with fp32 on top-1" would be trivially true and say nothing. No pretrained
weights can be downloaded here, so the figure uses the random-weight backbone (same
seed as the throughput runs) with its final layer replaced by a ridge-regression head
fitted, in fp32, to textured images' breeds (:mod:`bench.images.textured`): its top-1 then
depends on the image and has the decision margins of a fitted classifier. The head is
fitted on one tree and judged on another drawn with a different seed, so the agreement
is measured on images it never saw. The weights are written as a state dict and run
through the workload's own ``--weights`` loading path.

:func:`logit_agreement` compares a reduced-precision forward with the fp32 one image by
image (top-1 and the cosine similarity of the logits); its ``perturb`` deliberately
breaks the reduced-precision side (relative noise on every weight) so that a test can
show the figure falls when precision is lost.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)


def features(images_dir: str, files: Sequence[str], recipe: str, name: str, seed: int) -> tuple[list[str], Any]:
    """Penultimate-layer fp32 features of ``files`` (runs on a worker)."""
    import torch

    from workloads.images import dataset, model

    net = model.build_model(name, "random", seed)
    if not hasattr(net, "fc"):
        raise ValueError(f"model {name!r} has no `fc` layer: the probe head supports ResNets")
    net.fc = torch.nn.Identity()
    net = net.to(memory_format=torch.channels_last)
    batch, kept, _, _ = dataset.load_batch(images_dir, files, recipe)
    with torch.inference_mode():
        out = net(batch.contiguous(memory_format=torch.channels_last))
    return kept, out.float().numpy()


def fit_head(feats: np.ndarray, classes: Sequence[int], n_classes: int = 1000,
             ridge: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regression of one-hot ``classes`` on standardised ``feats``, folded into a
    linear layer's ``(weight (n_classes, d), bias (n_classes,))``. Classes never seen get
    a bias far below the others, so they are never predicted."""
    feats = np.asarray(feats, dtype=np.float64)
    present = sorted(set(classes))
    targets = (np.asarray(classes)[:, None] == np.asarray(present)[None, :]).astype(np.float64)
    mean, std = feats.mean(axis=0), feats.std(axis=0) + 1e-6
    scaled = (feats - mean) / std
    gram = scaled.T @ scaled + ridge * len(scaled) * np.eye(scaled.shape[1])
    solution = np.linalg.solve(gram, scaled.T @ targets)  # (d, k)
    weight = np.zeros((n_classes, feats.shape[1]))
    bias = np.full(n_classes, -100.0)
    weight[present] = (solution / std[:, None]).T
    bias[present] = -(mean / std) @ solution
    return weight.astype(np.float32), bias.astype(np.float32)


def save(path: str, name: str, seed: int, weight: np.ndarray, bias: np.ndarray) -> str:
    """The backbone's random weights (``seed``) with the fitted head, as a state dict
    (runs on a worker; written atomically)."""
    import torch

    from workloads.images import model

    net = model.build_model(name, "random", seed)
    with torch.no_grad():
        net.fc.weight.copy_(torch.from_numpy(weight))
        net.fc.bias.copy_(torch.from_numpy(bias))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    partial = f"{path}.partial-{os.getpid()}"
    torch.save(net.state_dict(), partial)
    os.replace(partial, path)
    return path


def fitted_weights(client, listing, recipe: str, name: str, seed: int, path: Path) -> str:
    """The probe's state-dict path, fitted on every image of ``listing`` (cached at
    ``path``: the data and the random seed fix it)."""
    if path.exists():
        return str(path)
    files = list(listing.files)
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    shares = [files[i::len(workers)] for i in range(len(workers))]
    futures = [client.submit(features, listing.images_dir, share, recipe, name, seed, workers=[w], pure=False)
               for w, share in zip(workers, shares, strict=True) if share]
    kept, feats = [], []
    for names, values in client.gather(futures):
        kept += names
        feats.append(values)
    from workloads.images import dataset

    classes = [listing.wnid_index[dataset.wnid_of(f.split("/", 1)[0])] for f in kept]
    weight, bias = fit_head(np.concatenate(feats), classes)
    logger.info("probe head for %s fitted on %d images of %d classes", name, len(kept), len(set(classes)))
    return client.submit(save, str(path), name, seed, weight, bias, pure=False).result()


LIVE_MARGIN = 50.0


def logit_agreement(images_dir: str, files: Sequence[str], recipe: str, spec: dict[str, Any], threads: int,
                    candidate: str = "bf16", perturb: float = 0.0) -> dict[str, Any]:
    """fp32 vs ``candidate`` (autocast dtype) logits of the workers' model holder on
    ``files``: per image, whether the top-1 agrees and the logits' cosine similarity.
    ``perturb`` > 0 adds that much relative Gaussian noise to every weight of the
    candidate (a deliberately broken precision). Runs on a worker or in a test."""
    import copy

    import torch

    from workloads.images import jpeg, model

    plugin = model.ModelPlugin(model.ModelSpec(**{**spec, "precision": "fp32", "warmup": False}))
    plugin.load_model(threads)
    batch, kept, _, _ = jpeg.load_batch(images_dir, files, recipe, "cpu")
    batch = batch.contiguous(memory_format=torch.channels_last)
    broken = plugin.model
    if perturb:
        broken = copy.deepcopy(plugin.model)
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for parameter in broken.parameters():
                parameter.mul_(1 + perturb * torch.randn(parameter.shape, generator=generator))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[candidate]
    with torch.inference_mode():
        reference = plugin.model(batch).float()
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            other = broken(batch).float()
    # the cosine over the classes in play: a logit 50 below the image's best is a class the
    # model never predicts (the probe's absent classes sit at -100 whatever the image), and
    # those constant entries would make any two logit vectors look alike
    live = reference > reference.max(dim=1, keepdim=True).values - LIVE_MARGIN
    cosine = torch.nn.functional.cosine_similarity(reference * live, other * live, dim=1)
    same = (reference.argmax(1) == other.argmax(1))
    return {"files": kept, "top1_same": same.tolist(), "cosine": cosine.tolist()}


def summarise(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Top-1 agreement and cosine similarity (mean, min) over the parts of a logit comparison."""
    same = [v for part in parts for v in part["top1_same"]]
    cosine = [v for part in parts for v in part["cosine"]]
    if not same:
        return {"images": 0, "top1_agreement": None, "cosine_mean": None, "cosine_min": None}
    return {"images": len(same), "top1_agreement": round(sum(same) / len(same), 6),
            "cosine_mean": round(float(np.mean(cosine)), 6), "cosine_min": round(float(np.min(cosine)), 6)}
