"""Bounded key/value caches: each eviction policy against its rules written out token by token in float64
over dozens of evictions (alone, and inside the softmax and RSA layers), on attention patterns where the
token to drop is known, and in the forecasters."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from tsrsa import RSAForecaster, TransformerForecaster, load
from tsrsa.nn import build_attention
from tsrsa.nn.kv_cache import CACHE_POLICIES, BoundedCacheState, CacheSpec, bounded_attend
from tsrsa.nn.multihead import merge_heads

from test_rsa import rem_reference

F64 = torch.float64


def _stream(layer, x, chunks=(3, 5, 1, 7)):
    """x (B, T, D) through ``layer.stream`` in uneven chunks."""
    state, out, i = layer.init_state(x.size(0)), [], 0
    for n in list(chunks) * x.size(1):
        if i >= x.size(1):
            break
        y, state = layer.stream(x[:, i:i + n], state)
        out.append(y)
        i += n
    return torch.cat(out, dim=1), state


def reference_stream(q, k, v, slopes, *, size, policy, sinks=0):
    """The cache's rules token by token in float64 with Python lists (the kv_cache module docstring, from
    the papers): each token joins the cache, its query attends to every kept token (logits q·k/√d, less
    ALiBi's slope times the distance: in the stream, or for ``sinks`` in the cache as StreamingLLM counts
    it), the weights add to the kept tokens' scores, and a cache holding ``size`` tokens drops one:
    ``window`` the oldest, ``sinks`` the oldest after the first ``sinks`` of the stream, ``h2o`` per head
    the least accumulated attention outside the size // 2 most recent (Zhang et al. 2023), ``tova`` the
    least weight of this query averaged over the heads (Oren et al. 2024).

    Returns the outputs (B, H, T, hs) and the kept positions [sequence][head] after the last token.
    """
    B, H, T, hs = q.shape
    out = torch.zeros_like(q)
    kept_all = []
    for b in range(B):
        kept = [[] for _ in range(H)]
        score = [{} for _ in range(H)]
        for t in range(T):
            weights = []
            for h in range(H):
                kept[h].append(t)
                score[h][t] = 0.0
                n = len(kept[h])
                logits = []
                for i, s in enumerate(kept[h]):
                    logit = float(q[b, h, t] @ k[b, h, s]) / math.sqrt(hs)
                    if slopes is not None:
                        logit -= float(slopes[h]) * ((n - 1 - i) if policy == "sinks" else (t - s))
                    logits.append(logit)
                top = max(logits)
                w = [math.exp(logit - top) for logit in logits]
                w = [x / sum(w) for x in w]
                out[b, h, t] = sum(wi * v[b, h, s] for wi, s in zip(w, kept[h]))
                for wi, s in zip(w, kept[h]):
                    score[h][s] += wi
                weights.append(w)
            if len(kept[0]) < size:
                continue
            if policy == "tova":
                mean = [sum(weights[h][i] for h in range(H)) / H for i in range(size)]
                drops = [kept[0][mean.index(min(mean))]] * H
            elif policy == "h2o":
                drops = []
                for h in range(H):
                    recent = sorted(kept[h])[-(size // 2):]
                    drops.append(min((s for s in kept[h] if s not in recent), key=lambda s: score[h][s]))
            elif policy == "sinks":
                drops = [min(s for s in kept[h] if s >= sinks) for h in range(H)]
            else:
                drops = [min(kept[h]) for h in range(H)]
            for h in range(H):
                kept[h].remove(drops[h])
                del score[h][drops[h]]
        kept_all.append(kept)
    return out, kept_all


@pytest.mark.parametrize("alibi", [False, True])
@pytest.mark.parametrize("policy", CACHE_POLICIES)
def test_each_policy_over_dozens_of_evictions_equals_its_rules_step_by_step(policy, alibi):
    g = torch.Generator().manual_seed(1)
    B, H, T, hs, size = 2, 3, 50, 4, 7  # 44 evictions per sequence and head
    q, k, v = (2 * torch.randn(B, H, T, hs, generator=g, dtype=F64) for _ in range(3))
    slopes = torch.tensor([0.5, 0.1, 0.02], dtype=F64) if alibi else None
    expected, kept = reference_stream(q, k, v, slopes, size=size, policy=policy, sinks=2)
    state, outputs = None, []  # None: the empty history
    for a, b in ((0, 1), (1, 9), (9, 10), (10, 31), (31, T)):  # several calls, carrying the state
        y, state = bounded_attend(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], slopes=slopes, size=size,
                                  policy=policy, sinks=2, state=state)
        assert isinstance(state, BoundedCacheState)
        outputs.append(y)
    torch.testing.assert_close(torch.cat(outputs, dim=2), expected, rtol=1e-10, atol=1e-10)
    assert state.pos.tolist() == kept and state.seen.tolist() == [T, T]
    if policy in ("h2o", "tova"):  # the policy keeps old tokens that a window would have dropped
        assert min(min(head) for sequence in kept for head in sequence) < T - size + 1
    if policy == "h2o":
        assert any(len({tuple(head) for head in sequence}) > 1 for sequence in kept)  # kept sets differ by head


def test_sinks_weigh_the_first_tokens_by_their_place_in_the_cache_not_in_the_stream():
    B, H, hs, T = 1, 1, 2, 200
    k, v = torch.zeros(B, H, T, hs, dtype=F64), torch.zeros(B, H, T, hs, dtype=F64)
    v[..., 0, 0] = 1.0  # only the first token's value is non-zero
    q = torch.zeros(B, H, T, hs, dtype=F64)  # every logit 0: the weights are ALiBi's alone
    y, state = bounded_attend(q, k, v, slopes=torch.tensor([0.5], dtype=F64), size=4, policy="sinks", sinks=1,
                              state=BoundedCacheState.empty(B, H, hs, dtype=F64))
    assert state.pos[0, 0].tolist() == [0, T - 2, T - 1]
    # the last query reads the sink, the two tokens before it and itself: distances 3, 2, 1, 0 in the cache
    weights = torch.softmax(-0.5 * torch.tensor([3.0, 2.0, 1.0, 0.0], dtype=F64), 0)
    assert y[0, 0, -1, 0].item() == pytest.approx(weights[0].item(), rel=1e-12)
    assert y[0, 0, -1, 0].item() > 0.05  # at its distance in the stream, 199 tokens, it would weigh e^-99


@pytest.mark.parametrize("kind", ["softmax", "rsa"])
@pytest.mark.parametrize("policy", CACHE_POLICIES)
def test_a_layer_streams_through_its_bounded_cache_as_the_rules_say(kind, policy):
    torch.manual_seed(0)
    options = {"n_dilated_regular": 1, "dilations": 3} if kind == "rsa" else {}
    layer = build_attention(kind, 16, 4, causal=True, alibi=True, cache_size=6, cache_policy=policy,
                            cache_sinks=2, **options).double().eval()
    with torch.no_grad():  # larger than the N(0, 0.02) start, so that attention is far from uniform
        layer.qkv.weight.normal_(0.0, 0.5)
    x = torch.randn(2, 30, 16, dtype=F64)
    got, state = _stream(layer, x)
    with torch.no_grad():
        q, k, v = layer.project(x)
        y, kept = reference_stream(q, k, v, layer.slopes, size=6, policy=policy, sinks=2)
        if kind == "rsa":
            g = layer.gate().item()
            y[:, :layer.n_rem] = (1 - g) * y[:, :layer.n_rem] + g * rem_reference(layer, v)
        expected = layer.proj(merge_heads(y))
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-9)
    cache = state.branch if kind == "rsa" else state  # RSA's softmax branch holds its cache
    assert cache.pos.tolist() == kept and cache.seen.tolist() == [30, 30]
    unbounded = build_attention(kind, 16, 4, causal=True, alibi=True, **options)
    assert layer.state_size(30) == unbounded.state_size(5) + 2 * 5 * 4  # 5 tokens kept, a position and a score each


def test_a_bounded_cache_has_no_parallel_form_and_says_so():
    layer = build_attention("softmax", 16, 4, causal=True, cache_size=4).double().eval()
    x = torch.randn(1, 6, 16, dtype=F64)
    _, state = _stream(layer, x)
    assert isinstance(state, BoundedCacheState) and state.k.size(2) == 3
    with pytest.raises(TypeError, match="bounded cache has no parallel form"):
        layer.parallel(x, state)
    with pytest.raises(TypeError, match="continues a BoundedCacheState"):
        layer.stream(x, layer.parallel(x)[1])  # the parallel form keeps every token: not a bounded state


def _one_hot_keys(*rows):
    return torch.tensor(rows, dtype=F64)


def test_tova_drops_the_token_the_heads_attend_to_least_and_the_newest_may_go():
    B, H, hs = 1, 2, 2
    keys = _one_hot_keys([1.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [1.0, 0.0])  # 4 tokens
    k = keys.expand(B, H, 4, hs).clone()
    v = torch.randn(B, H, 4, hs, dtype=F64)
    q = torch.zeros(B, H, 4, hs, dtype=F64)
    q[:, 0, 3] = torch.tensor([8.0, 0.0])  # head 0: token 1 far below the rest
    q[:, 1, 3] = torch.tensor([-0.5, 0.0])  # head 1: mildly for token 1, against the others
    _, state = bounded_attend(q, k, v, size=4, policy="tova")
    # mean over heads: token 1 lowest (head 0 outweighs head 1); one kept set for both heads
    assert state.pos[0].tolist() == [[0, 2, 3], [0, 2, 3]]
    q[:, :, 3] = torch.tensor([8.0, 0.0])
    k[:, :, 3] = torch.tensor([-2.0, 0.0])  # now the newest token is the one attended to least
    _, state = bounded_attend(q, k, v, size=4, policy="tova")
    assert state.pos[0, 0].tolist() == [0, 1, 2]


def test_h2o_keeps_the_heavy_hitters_of_each_head_and_the_recent_tokens():
    B, H, hs = 1, 2, 2
    k = torch.zeros(B, H, 3, hs, dtype=F64)
    k[:, 0] = _one_hot_keys([10.0, 0.0], [0.0, 10.0], [0.0, 0.0])
    k[:, 1] = _one_hot_keys([0.0, 10.0], [10.0, 0.0], [0.0, 0.0])
    q = torch.zeros(B, H, 3, hs, dtype=F64)
    q[:, :, :, 0] = 10.0  # every query looks along the first axis: head 0 at token 0, head 1 at token 1
    v = torch.randn(B, H, 3, hs, dtype=F64)
    _, state = bounded_attend(q, k, v, size=3, policy="h2o")
    # the most recent token (size // 2 = 1) stays; of tokens 0 and 1 each head keeps the one it attended to
    assert state.pos[0].tolist() == [[0, 2], [1, 2]]
    assert state.score[0, 1, 0] > 1.9  # token 1 of head 1: nearly all of queries 1 and 2


@pytest.mark.parametrize("options, error, match", [
    ({"cache_size": 8, "cache_policy": "lru"}, ValueError, "cache_policy must be one of"),
    ({"cache_size": 4.0}, TypeError, "cache_size must be an int"),
    ({"cache_size": 4, "cache_policy": "sinks", "cache_sinks": 4}, ValueError, "at least 5"),
    ({"cache_size": 1, "cache_policy": "h2o"}, ValueError, "at least 2"),
    ({"cache_size": 4, "cache_sinks": -1}, ValueError, "cache_sinks must be"),
])
def test_bad_cache_options_are_named(options, error, match):
    with pytest.raises(error, match=match):
        build_attention("softmax", 16, 4, causal=True, **options)
    with pytest.raises(error, match=match):
        CacheSpec(options.get("cache_size"), options.get("cache_policy", "window"), options.get("cache_sinks", 4))


def _series():
    t = np.arange(300)
    return pd.DataFrame({"unique_id": "s", "ds": pd.date_range("2024-01-01", periods=300, freq="h"),
                         "y": np.sin(2 * np.pi * t / 24) + 0.1 * np.random.default_rng(0).standard_normal(300)})


def test_a_streaming_forecaster_with_a_bounded_cache_updates_saves_and_keeps_its_state(tmp_path):
    y = _series()
    model = TransformerForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True,
                                  attention_options={"cache_size": 6, "cache_policy": "tova"}, random_state=0)
    model.fit(y.iloc[:260]).update(y.iloc[260:])
    again = TransformerForecaster(**model.get_params()).fit(y.iloc[:260])
    np.testing.assert_allclose(model.predict()["yhat"], again.predict(df=y)["yhat"], rtol=1e-5, atol=1e-6)
    positions = model.memory_.groups[0].state.kept_positions  # {layer: (B, H, K)}
    assert sorted(positions) == [0, 1] and all(p.shape[-1] == 5 for p in positions.values())  # 5 of 75 tokens kept
    model.save(tmp_path / "m")
    back = load(tmp_path / "m")
    pd.testing.assert_frame_equal(back.predict(), model.predict())


def test_rsa_forecaster_takes_the_cache_options_and_names_a_bad_one():
    y = _series()
    model = RSAForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True,
                          attention_options={"cache_size": 4, "cache_policy": "h2o"},
                          random_state=0).fit(y.iloc[:260]).update(y.iloc[260:])
    positions = model.memory_.groups[0].state.kept_positions  # {layer: (B, H, K)}
    assert sorted(positions) == [0, 1] and all(p.shape[-1] == 3 for p in positions.values())
    bad = RSAForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True,
                        attention_options={"cache_size": 4, "cache_policy": "lru"})
    with pytest.raises(ValueError, match="cache_policy must be one of"):
        bad.fit(y)
    assert not hasattr(bad, "network_")


def test_kept_history_names_the_timestamps_of_the_tokens_each_layer_keeps():
    y = _series().iloc[:122]  # 30 tokens of 4 steps, 2 steps waiting in a partial patch
    model = TransformerForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True,
                                  attention_options={"cache_size": 4, "cache_policy": "tova"}, random_state=0).fit(y)
    kept = model.kept_history()
    assert sorted(kept["layer"].unique()) == [0, 1] and kept.groupby("layer").size().tolist() == [3, 3]
    assert kept["head"].isna().all()  # tova: one kept set for every head of a layer
    assert kept["token"].between(0, 29).all()
    steps = y["ds"].to_numpy()
    assert (kept["start"].to_numpy() == steps[kept["token"] * 4]).all()
    assert (kept["end"].to_numpy() == steps[kept["token"] * 4 + 3]).all()
    unbounded = TransformerForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True).fit(y)
    with pytest.raises(ValueError, match="bounded cache"):
        unbounded.kept_history()
