"""How the model runs (workloads.images.graphs): the modes' validation on the CPU, and on
a GPU that a CUDA-graph replay gives the eager outputs, a smaller batch padded into the
captured graph included."""
from __future__ import annotations

import pytest

from workloads.images import graphs
from workloads.images.model import ModelPlugin, ModelSpec


def test_eager_is_the_model_itself_and_unknown_modes_are_refused():
    from torch import nn

    model = nn.Linear(2, 2)
    assert graphs.accelerate(model, "eager", "cpu") is model
    with pytest.raises(ValueError, match="graph must be one of"):
        graphs.accelerate(model, "tensorrt", "cuda")


@pytest.mark.parametrize("graph", ["cudagraph", "compile-cudagraphs"])
def test_cuda_graph_modes_need_cuda(graph):
    from torch import nn

    with pytest.raises(ValueError, match=f"graph {graph!r} needs device cuda"):
        graphs.accelerate(nn.Linear(2, 2), graph, "cpu")


def test_the_plugin_refuses_cuda_graphs_on_the_cpu():
    plugin = ModelPlugin(ModelSpec(model="workloads.images.synthetic:colour_classifier", graph="cudagraph",
                                   warmup=False))
    with pytest.raises(ValueError, match="needs device cuda"):
        plugin.load_model(1)


@pytest.mark.gpu
def test_a_captured_graph_replays_the_eager_outputs_for_full_and_smaller_batches():
    import torch
    from torchvision.models import resnet18

    torch.manual_seed(0)
    model = resnet18().eval().cuda().to(memory_format=torch.channels_last).requires_grad_(False)
    captured = graphs.accelerate(model, "cudagraph", "cuda")
    batch = torch.randn(8, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        expected = model(batch).float()
        full = captured(batch).float().clone()
        small = captured(batch[:3]).float().clone()  # padded into the 8-image graph
    assert torch.allclose(full, expected, atol=0.05, rtol=0.05)
    assert torch.allclose(small, expected[:3], atol=0.05, rtol=0.05)
    assert len(captured.graphs) == 1
