"""The conformance suite every sequence-mixing kind passes.

Parametrised over ``tsrsa.nn.attention_kinds()``: a kind registered in ``tsrsa/nn/registry.py``
is checked here with no edit to this file. ``VARIANTS`` may add option sets beyond a kind's
defaults (one line per kind) where its branches differ.

For a kind with a recurrent form it checks the one signature: the kind declares its state class
and its ops (each ``op(..., state=None, output_state=True)``); ``parallel`` and ``stream`` return
(output, state of that class), each continues from the state the other returns, equal to one long
run in float64; and the state goes through the one path of every state: to a flat dict of arrays
and back, and apart and together along the batch.
"""
from __future__ import annotations

import inspect
import io

import pytest
import torch

from tsrsa.nn import (
    BackboneConfig, ForecastingTransformer, LayerState, StreamingState, StreamingTransformer, attention_kinds,
    get_attention,
)
from tsrsa.nn.registry import build_attention

D, H = 16, 4  # width and heads every kind must accept with its default options

#: option sets beyond each kind's defaults, so that every branch is exercised
VARIANTS = {
    "softmax": [{"alibi": True}],
    "rsa": [{"n_dilated_regular": 1, "n_dilated_cyclic": 1, "n_regular": 0, "n_cyclic": 0, "dilations": [2, 3]},
            {"gate": "head", "share_cyclic": False, "gate_init": -1.0, "alibi": True},
            {"t2r_features": 8, "n_dilated_regular": 1, "dilations": 3},
            {"t2r_features": 6, "alibi": True}],
    "linear": [{"chunk_size": 4}],
    "block_recurrent": [{"block_size": 3, "n_states": 2, "gate": "lstm", "alibi": True},
                        {"block_size": 2, "state_mlp": False, "d_ff": 8}],
    "t2r": [{"chunk_size": 4, "feature_size": 8}, {"feature_size": 5, "floor": 0.5, "chunk_size": 3},
            {"alibi": True, "chunk_size": 3, "feature_size": 6}],
    "fast_weight": [{"chunk_size": 4}, {"update": "sum", "feature_map": "dpfp", "nu": 2, "chunk_size": 5},
                    {"update": "delta", "feature_map": "elu", "chunk_size": 3, "beta_init": 0.9},
                    {"update": "sum", "feature_map": "elu"}, {"feature_map": "dpfp", "nu": 3}],
}
CASES = [pytest.param(kind, options, id=f"{kind}-{i}")
         for kind in attention_kinds() for i, options in enumerate([{}] + VARIANTS.get(kind, []))]
RECURRENT = [case for case in CASES if get_attention(case.values[0]).recurrent]
#: each recurrent kind at its defaults (the network-level check; the layer-level ones take every variant)
RECURRENT_DEFAULTS = [case for case in RECURRENT if not case.values[1]]


def spread(module, seed=0):
    """Redraw every weight matrix N(0, 0.5²), far from the N(0, 0.02²) start: on unit inputs queries and
    keys then have entries of about 2 and logits of a few units, so attention is far from uniform and a
    fault in a form shows as an error of order one (at the start, a dropped 1/√d moved the output by
    1e-4). Vectors (biases, decays, gates, norms) keep the values the kind gave them."""
    g = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for p in module.parameters():
            if p.dim() > 1:
                p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64))
    return module


def make(kind, options, *, causal, seed=0, dtype=torch.float64, spread_weights=True):
    torch.manual_seed(seed)
    layer = build_attention(kind, D, H, causal=causal, **options).double()
    return (spread(layer, seed) if spread_weights else layer).to(dtype).eval()


def causal_modes(kind):
    return [False, True] if get_attention(kind).bidirectional else [True]


@pytest.mark.parametrize("kind,options", CASES)
def test_every_option_has_a_default_and_unknown_options_are_refused(kind, options):
    cls = get_attention(kind)
    assert set(options) <= set(cls.option_defaults())
    with pytest.raises(TypeError, match="has no option"):
        cls.check_options({"no_such_option": 1})


@pytest.mark.parametrize("kind,options", CASES)
@pytest.mark.parametrize("T", [1, 5, 12])
def test_output_shape(kind, options, T):
    for causal in causal_modes(kind):
        layer = make(kind, options, causal=causal)
        x = torch.randn(3, T, D, dtype=torch.float64)
        assert layer(x).shape == (3, T, D)


@pytest.mark.parametrize("kind,options", CASES)
def test_causal_means_every_branch_reads_only_the_past(kind, options):
    layer = make(kind, options, causal=True)
    x = torch.randn(2, 10, D, dtype=torch.float64)
    base = layer(x)
    for t in (0, 4, 8):
        later = x.clone()
        later[:, t + 1:] += torch.randn_like(later[:, t + 1:])
        torch.testing.assert_close(layer(later)[:, : t + 1], base[:, : t + 1], rtol=0, atol=1e-12)
        assert not torch.allclose(layer(later)[:, t + 1:], base[:, t + 1:])  # the later tokens did change


@pytest.mark.parametrize("kind,options", RECURRENT)
def test_recurrent_form_equals_the_causal_parallel_form(kind, options):
    layer = make(kind, options, causal=True)
    x = torch.randn(3, 23, D, dtype=torch.float64)
    parallel = layer(x)
    for sizes in ([23], [1] * 23, [5, 1, 9, 8], [2, 7, 3, 11]):
        state, outputs, start = layer.init_state(3, dtype=torch.float64), [], 0
        for n in sizes:
            before = {k: v.clone() for k, v in state.tensors().items()}
            y, new = layer.stream(x[:, start: start + n], state)
            for name, value in state.tensors().items():  # the state is a value: stream never changes it
                assert torch.equal(before[name], value), name
            outputs.append(y)
            state, start = new, start + n
        torch.testing.assert_close(torch.cat(outputs, dim=1), parallel, rtol=0, atol=1e-6)
        assert all(v.shape[0] == 3 for v in state.tensors().values())  # batch first, so states stack


@pytest.mark.parametrize("kind,options", RECURRENT)
def test_state_size_is_what_the_state_holds(kind, options):
    layer = make(kind, options, causal=True)
    state = layer.init_state(1, dtype=torch.float64)
    _, state = layer.stream(torch.randn(1, 7, D, dtype=torch.float64), state)
    held = sum(v.numel() * (2 if v.is_complex() else 1) for v in state.tensors().values())
    assert held == layer.state_size(7)


# ---------------------------------------------------------------------- the one signature and the one state path
@pytest.mark.parametrize("kind", attention_kinds())
def test_a_kind_declares_its_state_class_and_ops_with_the_one_signature(kind):
    cls = get_attention(kind)
    assert (cls.state_type is not None) == (cls.ops is not None) == cls.recurrent
    if not cls.recurrent:
        return
    assert issubclass(cls.state_type, LayerState)
    for op in cls.ops:
        parameters = inspect.signature(op).parameters
        assert parameters["state"].default is None and parameters["state"].kind is inspect.Parameter.KEYWORD_ONLY, op
        assert parameters["output_state"].default is True, op


def assert_same_state(got, expected, atol=1e-6):
    assert type(got) is type(expected)
    got, expected = got.tensors(), expected.tensors()
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name].shape == expected[name].shape and got[name].dtype == expected[name].dtype, name
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=atol, msg=name)


@pytest.mark.parametrize("kind,options", RECURRENT)
def test_each_form_returns_its_state_and_continues_from_the_others(kind, options):
    layer = make(kind, options, causal=True)
    x = torch.randn(3, 23, D, dtype=torch.float64)
    whole, end = layer.parallel(x)  # one long run
    torch.testing.assert_close(whole, layer(x), rtol=0, atol=0)
    assert isinstance(end, layer.state_type) and layer.parallel(x, output_state=False)[1] is None
    for cut in (1, 7, 16):
        first, state = layer.parallel(x[:, :cut])  # parallel, then recurrent
        assert isinstance(state, layer.state_type)
        rest, after = layer.stream(x[:, cut:], state)
        torch.testing.assert_close(torch.cat([first, rest], dim=1), whole, rtol=0, atol=1e-6)
        assert_same_state(after, end)
        first, state = layer.stream(x[:, :cut], layer.init_state(3, dtype=torch.float64))  # recurrent, then parallel
        assert isinstance(state, layer.state_type)
        rest, after = layer.parallel(x[:, cut:], state)
        torch.testing.assert_close(torch.cat([first, rest], dim=1), whole, rtol=0, atol=1e-6)
        assert_same_state(after, end)


def through_arrays(state):
    """The state as a saved model holds it (numpy arrays by name) and back, by the one path."""
    arrays = {name: t.numpy().copy() for name, t in state.detach().tensors().items()}
    return type(state).from_tensors({name: torch.from_numpy(a) for name, a in arrays.items()}), arrays


@pytest.mark.parametrize("kind,options", RECURRENT)
def test_the_state_round_trips_through_arrays_and_the_batch(kind, options):
    layer = make(kind, options, causal=True)
    x = torch.randn(3, 11, D, dtype=torch.float64)
    state = layer.init_state(3, dtype=torch.float64)
    assert isinstance(state, layer.state_type)
    _, state = layer.stream(x[:, :7], state)
    assert isinstance(state, layer.state_type)
    loaded, arrays = through_arrays(state)
    assert_same_state(loaded, state, atol=0)
    assert_same_state(LayerState.from_tensors(dict(loaded.tensors())), state, atol=0)  # the class from the names
    assert all(a.shape[0] == 3 for a in arrays.values())
    # apart and together along the batch: each part streams as its rows of the whole
    y, after = layer.stream(x[:, 7:], state)
    parts = [state.select(torch.tensor([2, 0])), state.select(slice(1, 2))]
    joined = type(state).concat(parts)
    assert_same_state(joined, state.select(torch.tensor([2, 0, 1])), atol=0)
    y_part, after_part = layer.stream(x[[2, 0], 7:], parts[0])
    torch.testing.assert_close(y_part, y[[2, 0]], rtol=0, atol=1e-12)
    assert_same_state(after_part, after.select(torch.tensor([2, 0])), atol=1e-12)
    assert_same_state(state.detach().to("cpu"), state, atol=0)


@pytest.mark.parametrize("kind,options", CASES)
def test_save_and_load_give_the_same_output(kind, options):
    for causal in causal_modes(kind):
        layer = make(kind, options, causal=causal, seed=0)
        buffer = io.BytesIO()
        torch.save(layer.state_dict(), buffer)
        other = make(kind, options, causal=causal, seed=1)
        x = torch.randn(2, 9, D, dtype=torch.float64)
        assert not torch.allclose(other(x), layer(x))
        buffer.seek(0)
        other.load_state_dict(torch.load(buffer, weights_only=True))
        torch.testing.assert_close(other(x), layer(x), rtol=0, atol=0)


@pytest.mark.parametrize("kind,options", CASES)
def test_runs_under_bf16_autocast_on_the_cpu(kind, options):
    layer = make(kind, options, causal=True, dtype=torch.float32, spread_weights=False)  # the kind's own start
    x = torch.randn(2, 12, D)
    reference = layer(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = layer(x)
    assert torch.isfinite(low).all()
    assert (low.float() - reference).norm() <= 0.05 * reference.norm()


@pytest.mark.parametrize("kind,options", CASES)
def test_a_gradient_reaches_every_parameter(kind, options):
    for causal in causal_modes(kind):
        layer = make(kind, options, causal=causal).train()
        # 20 tokens: more than one block of a block-level kind, so its carried state is read too
        layer(torch.randn(2, 20, D, dtype=torch.float64)).pow(2).sum().backward()
        for name, p in layer.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("kind,options", CASES)
def test_the_kind_initialises_itself_and_the_backbone_leaves_it_alone(kind, options):
    torch.manual_seed(3)
    first = build_attention(kind, D, H, causal=True, **options)
    torch.manual_seed(3)
    again = build_attention(kind, D, H, causal=True, **options)
    for (name, a), b in zip(first.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name
    config = BackboneConfig(input_size=16, h=3, patch_len=4, d_model=D, n_heads=H, n_layers=2, d_ff=8,
                            attention=kind, attention_options=options, causal=True)
    net = ForecastingTransformer(config)
    kept = {k: v.clone() for k, v in net.blocks[0].attn.state_dict().items()}
    net.reset_parameters()  # the backbone's own weights only
    for name, value in net.blocks[0].attn.state_dict().items():
        assert torch.equal(value, kept[name]), name


@pytest.mark.parametrize("kind,options", RECURRENT_DEFAULTS)
def test_the_streaming_network_equals_its_parallel_form_at_every_token(kind, options):
    torch.manual_seed(0)
    config = BackboneConfig(input_size=12, h=5, patch_len=3, d_model=D, n_heads=H, n_layers=2, d_ff=8, attention=kind,
                            attention_options=options, causal=True, stream=True, n_outputs=2)
    net = StreamingTransformer(config).double().eval()
    for block in net.blocks:
        spread(block.attn)
    x = torch.randn(2, 31, dtype=torch.float64)  # 10 tokens and one step in a partial patch
    parallel = net.forward_tokens(x[:, :30])  # (2, 10, 5 + 3 - 1, 2)
    state, outputs, start = net.init_state(2, dtype=torch.float64), [], 0
    for n in (1, 1, 4, 10, 2, 13):
        y, state = net.stream(x[:, start: start + n], state)
        outputs.append(y)
        start += n
    torch.testing.assert_close(torch.cat(outputs, dim=1), parallel, rtol=0, atol=1e-6)
    assert state.pending.shape == (2, 1)
    torch.testing.assert_close(net.eval()(x[:, :12]), net.forward_tokens(x[:, :12])[:, -1, :5])
    # the network's state, to arrays and back by the one path, continues as the state it came from
    loaded, arrays = through_arrays(state)
    assert {"pending", "norm.mean", "norm.square", "readout"} <= set(arrays)
    assert all(name.startswith(("blocks.0.", "blocks.1.")) for name in set(arrays) - {"pending", "norm.mean",
                                                                                         "norm.square", "readout"})
    assert isinstance(loaded, StreamingState) and all(type(a) is type(b) for a, b in zip(loaded.blocks, state.blocks))
    more = torch.randn(2, 8, dtype=torch.float64)
    torch.testing.assert_close(net.stream(more, loaded)[0], net.stream(more, state)[0], rtol=0, atol=0)


# ---------------------------------------------------------------------- on a CUDA device
# tests/conftest.py skips these where torch sees no CUDA device

def relative_error(value, reference) -> float:
    value, reference = value.detach().double(), reference.detach().double()
    return float((value - reference).norm() / reference.norm())


@pytest.mark.gpu
@pytest.mark.parametrize("kind,options", CASES)
def test_on_cuda_every_branch_computes_what_it_computes_on_the_cpu(kind, options):
    for causal in causal_modes(kind):
        layer = make(kind, options, causal=causal)
        x = torch.randn(3, 40, D, dtype=torch.float64)
        reference = layer(x)
        on_gpu = make(kind, options, causal=causal).cuda()
        torch.testing.assert_close(on_gpu(x.cuda()).cpu(), reference, rtol=0, atol=1e-10)
        single = on_gpu.float()(x.float().cuda())
        assert single.dtype == torch.float32 and relative_error(single.cpu(), reference) < 1e-4


#: largest relative error (Frobenius norm) of a layer's output under autocast against float32 on the GPU
AUTOCAST_TOLERANCE = {torch.bfloat16: 5e-2, torch.float16: 1e-2}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", sorted(AUTOCAST_TOLERANCE, key=str), ids=str)
@pytest.mark.parametrize("kind,options", CASES)
def test_on_cuda_autocast_stays_near_float32_and_its_gradients_are_finite(kind, options, dtype):
    for causal in causal_modes(kind):
        # the kind's own initial weights, as a network starts training: at the spread weights of the
        # form checks a recurrence over 40 steps (fast weights, block states) compounds bfloat16's
        # rounding to 5-20 % of the output
        layer = make(kind, options, causal=causal, dtype=torch.float32, spread_weights=False).cuda().train()
        x = torch.randn(4, 40, D, device="cuda")
        with torch.no_grad():
            reference = layer.eval()(x)
            with torch.autocast("cuda", dtype=dtype):
                low = layer(x)
        assert torch.isfinite(low).all()
        assert relative_error(low, reference) < AUTOCAST_TOLERANCE[dtype], (kind, causal)
        layer.train()
        with torch.autocast("cuda", dtype=dtype):
            loss = layer(x).float().pow(2).mean()
        loss.backward()
        for name, p in layer.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all(), name


@pytest.mark.gpu
@pytest.mark.parametrize("kind,options", RECURRENT)
def test_on_cuda_the_recurrent_form_equals_the_parallel_form(kind, options):
    layer = make(kind, options, causal=True).cuda()
    x = torch.randn(3, 23, D, dtype=torch.float64, device="cuda")
    parallel = layer(x)
    state, outputs, start = layer.init_state(3, device="cuda", dtype=torch.float64), [], 0
    for n in (5, 1, 9, 8):
        y, state = layer.stream(x[:, start: start + n], state)
        outputs.append(y)
        start += n
    assert isinstance(state, layer.state_type) and all(v.device.type == "cuda" for v in state.tensors().values())
    torch.testing.assert_close(torch.cat(outputs, dim=1), parallel, rtol=0, atol=1e-6)
