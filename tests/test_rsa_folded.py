"""RSA's folded training form: the gate folded into the dropped-out softmax weights, with the REMs and
gates built over all heads."""
from __future__ import annotations

import pytest
import torch

from tsrsa.nn import RSAAttention


def composed(layer, att):
    """The folded weights composed of autograd ops (``folded_matrices``), as with a set gate."""
    P, gate = layer.folded_matrices(att.size(-1))
    return torch.lerp(att, P, gate.view(-1, 1, 1))


@pytest.mark.parametrize("causal,alibi,n_dilated,gate", [(False, False, 1, "layer"), (True, False, 1, "head"),
                                                         (True, True, 0, "head"), (False, True, 0, "layer")])
@pytest.mark.parametrize("node", ["one", "composed"])
def test_the_gate_folded_into_the_weights_keeps_outputs_and_gradients(causal, alibi, n_dilated, gate, node):
    """Training with attention dropout on the CPU, a layer folds the gate into the softmax weights: one
    product ((1 - g) dropout(softmax) + g P) V, equal in float64 to the two products gated (outputs and
    gradients, the custom backward's among them; the same dropout mask, P not dropped out), with every head a
    REM head or not; in one autograd node (``FoldedRem``) or, with a set gate's path, composed of ops."""
    layer = RSAAttention(16, 4, dropout=0.3, causal=causal, alibi=alibi, n_dilated_regular=n_dilated, gate=gate)
    layer.double().set_rem_parameters(lam=[-0.7] + [0.8] * n_dilated, gamma=[0.9], theta=[0.6],
                                      mu=torch.linspace(-1.0, 1.5, layer.mu.numel()))
    if node == "composed":
        layer.folded_weights = lambda att: composed(layer, att)
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    assert layer.folds(x, None, False) and not layer.folds(x, None, True) and layer.eval().folds(x, None, False)
    assert not layer.folds(torch.randn(2, 16, 16, dtype=torch.float64), None, False)  # the fused kernel's keys
    results = []
    for folded in (True, False):
        layer.train().folds = lambda *args: folded
        torch.manual_seed(11)
        y = layer(x)
        results.append((y, *torch.autograd.grad(y.square().sum(), list(layer.parameters()))))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("gate,heads", [("layer", dict(n_dilated_regular=1)), ("head", {}),
                                        ("head", dict(n_regular=0, n_cyclic=2, share_cyclic=False)),
                                        ("layer", dict(n_regular=3, n_cyclic=0))])
def test_the_folded_node_gradient_is_the_numerical_one(gate, heads):
    """``FoldedRem``'s backward, written out, against finite differences in float64 (w and the four
    parameters, every head kind, with and without decays or cycles; a negative decay, whose powers
    alternate in sign)."""
    from tsrsa.nn.rem_fold import folded_rem

    layer = RSAAttention(8, 4, gate=gate, **heads).double()
    with torch.no_grad():
        layer.eta.copy_(torch.linspace(-0.7, 0.9, layer.eta.numel()))
        layer.nu.copy_(torch.linspace(1.5, 2.5, layer.nu.numel()))
        layer.theta.copy_(torch.linspace(0.4, 1.1, layer.theta.numel()))
        layer.mu.copy_(torch.linspace(-0.5, 0.8, layer.mu.numel()))
    folded = layer.folded_lattice(5, torch.float64)
    w = torch.rand(3, 4, 5, 5, dtype=torch.float64, requires_grad=True)
    inputs = (w, layer.eta, layer.nu, layer.theta, layer.mu)
    assert torch.autograd.gradcheck(lambda *a: folded_rem(*a, folded), inputs)
    torch.testing.assert_close(folded_rem(*inputs, folded), composed(layer, w), rtol=1e-12, atol=1e-14)


def test_a_set_gate_and_autocast_take_the_composed_ops():
    """The one node reads the learned gate in the parameters' precision: a set gate (``gate_override``) or
    autocast goes through ``folded_matrices``, and the output follows the set gate."""
    layer = RSAAttention(16, 4, dropout=0.2).train()
    att = torch.softmax(torch.randn(2, 4, 6, 6), -1)
    layer.gate_override = 1.0
    P, _ = layer.folded_matrices(6)
    torch.testing.assert_close(layer.folded_weights(att)[:, :layer.n_rem], P[:layer.n_rem].expand(2, -1, -1, -1))
    torch.testing.assert_close(layer.folded_weights(att)[:, layer.n_rem:], att[:, layer.n_rem:])
    layer.gate_override = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.testing.assert_close(layer.folded_weights(att), composed(layer, att))


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


def test_a_forecast_over_few_keys_folds_as_training_does():
    """In evaluation over fewer than 16 keys the softmax weights are written out too, so the gate folds into
    them: the same forecast as the two products gated, in float64, and the same as the streamed one."""
    layer = RSAAttention(16, 4, dropout=0.2, causal=True, n_dilated_regular=1).double().eval()
    layer.set_rem_parameters(lam=[0.8, -0.5], gamma=[0.9], theta=[0.7], mu=[0.4])
    x = torch.randn(3, 10, 16, dtype=torch.float64)
    with torch.no_grad():
        folded = layer(x)
        layer.folds = lambda *args: False
        composed_ = layer(x)
        streamed, _ = layer.stream(x, layer.init_state(3, dtype=torch.float64))
    torch.testing.assert_close(folded, composed_, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(folded, streamed, rtol=1e-9, atol=1e-10)
