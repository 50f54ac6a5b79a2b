"""RSA's folded training form: the gate folded into the dropped-out softmax weights, with the REMs and
gates built over all heads."""
from __future__ import annotations

import pytest
import torch

from tsrsa.nn import RSAAttention


@pytest.mark.parametrize("causal,alibi,n_dilated,gate", [(False, False, 1, "layer"), (True, False, 1, "head"),
                                                         (True, True, 0, "head"), (False, True, 0, "layer")])
def test_the_gate_folded_into_the_weights_keeps_outputs_and_gradients(causal, alibi, n_dilated, gate):
    """Training with attention dropout on the CPU, a layer folds the gate into the softmax weights: one
    product ((1 - g) dropout(softmax) + g P) V, equal in float64 to the two products gated (outputs and
    gradients, the custom backward's among them; the same dropout mask, P not dropped out), with every head a
    REM head or not."""
    layer = RSAAttention(16, 4, dropout=0.3, causal=causal, alibi=alibi, n_dilated_regular=n_dilated, gate=gate)
    layer.double().set_rem_parameters(mu=torch.linspace(-1.0, 1.5, layer.mu.numel()))
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    assert layer.folds(x, None, False) and not layer.folds(x, None, True) and not layer.eval().folds(x, None, False)
    results = []
    for folded in (True, False):
        layer.train().folds = lambda *args: folded
        torch.manual_seed(11)
        y = layer(x)
        results.append((y, *torch.autograd.grad(y.square().sum(), list(layer.parameters()))))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_rem_values_and_gates_keep_full_precision_under_autocast():
    """A head's decay near 1 enters P as its power: in bfloat16 0.995 would become 0.996."""
    layer = RSAAttention(16, 4, n_regular=1, n_cyclic=1, gate="head")
    layer.set_rem_parameters(lam=[0.995], gamma=[0.99], mu=[0.3, -0.2, 0.1])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        radius, angle = layer.rem_parameters()
        P, gate = layer.folded_matrices(8)
    assert radius.dtype == angle.dtype == P.dtype == gate.dtype == torch.float32
    torch.testing.assert_close(radius, torch.tensor([0.995, 0.99, 0.99]), rtol=0, atol=1e-6)
    torch.testing.assert_close(P[0, 7, 0], torch.tensor(0.995 ** 7), rtol=0, atol=1e-6)
    torch.testing.assert_close(gate, torch.sigmoid(torch.tensor([0.3, -0.2, 0.1, 0.0])) * torch.tensor([1, 1, 1, 0]))
