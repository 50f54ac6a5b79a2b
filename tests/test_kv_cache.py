"""Bounded key/value caches: each eviction policy on attention patterns where the token to drop is known,
and the bounded forms against attention over the tokens they keep."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from tsrsa import RSAForecaster, TransformerForecaster, load
from tsrsa.nn import build_attention
from tsrsa.nn.kv_cache import CACHE_POLICIES, CacheSpec, bounded_attend, empty_bounded_cache
from tsrsa.nn.softmax import alibi_slopes

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


def _reference(q, k, v, kept, slopes=None):
    """Attention of each query t over the tokens kept[t] (positions), ALiBi's bias by distance."""
    out = torch.zeros_like(q)
    for t in range(q.size(2)):
        idx = torch.tensor(kept[t])
        logits = (q[:, :, t:t + 1] @ k[:, :, idx].transpose(-2, -1)).squeeze(2) / math.sqrt(q.size(-1))
        if slopes is not None:
            logits = logits - slopes.view(1, -1, 1) * (t - idx).to(logits.dtype)
        out[:, :, t] = (torch.softmax(logits, -1)[:, :, None] @ v[:, :, idx]).squeeze(2)
    return out


@pytest.mark.parametrize("kind", ["softmax", "rsa"])
@pytest.mark.parametrize("policy", CACHE_POLICIES)
def test_a_cache_that_never_fills_equals_the_unbounded_one(kind, policy):
    torch.manual_seed(0)
    options = {"alibi": True} if kind == "softmax" else {"alibi": True, "n_dilated_regular": 1}
    unbounded = build_attention(kind, 16, 4, causal=True, **options).double().eval()
    bounded = build_attention(kind, 16, 4, causal=True, cache_size=32, cache_policy=policy, **options).double().eval()
    bounded.load_state_dict(unbounded.state_dict())
    x = torch.randn(2, 20, 16, dtype=F64)
    expected, _ = _stream(unbounded, x)
    got, state = _stream(bounded, x)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-9)
    assert state["pos"].shape == (2, 4, 20) and state["seen"].tolist() == [20, 20]
    assert bounded.state_size(20) == unbounded.state_size(20) + 2 * 20 * 4  # plus a position and a score per head


@pytest.mark.parametrize("alibi", [False, True])
def test_window_and_sinks_attend_over_exactly_the_tokens_they_keep(alibi):
    torch.manual_seed(1)
    B, H, T, hs, size = 2, 2, 12, 3, 5
    q, k, v = (torch.randn(B, H, T, hs, dtype=F64) for _ in range(3))
    slopes = torch.tensor(alibi_slopes(H), dtype=F64) if alibi else None
    window = [list(range(max(0, t - size + 1), t + 1)) for t in range(T)]
    # sinks: the first 2 tokens, then the latest size - 2 (every token while the cache is not full)
    sinks = [list(range(t + 1)) if t < size else [0, 1, *range(t - size + 3, t + 1)] for t in range(T)]
    after = {"window": [8, 9, 10, 11], "sinks": [0, 1, 10, 11]}  # what the last step leaves: size - 1 tokens
    for policy, kept in (("window", window), ("sinks", sinks)):
        state = empty_bounded_cache(B, H, hs, dtype=F64)
        got, state = bounded_attend(q, k, v, state, slopes, size=size, policy=policy, sinks=2)
        torch.testing.assert_close(got, _reference(q, k, v, kept, slopes), rtol=1e-9, atol=1e-9)
        assert state["pos"][0, 0].tolist() == after[policy]


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
    _, state = bounded_attend(q, k, v, empty_bounded_cache(B, H, hs, dtype=F64), None, size=4, policy="tova")
    # mean over heads: token 1 lowest (head 0 outweighs head 1); one kept set for both heads
    assert state["pos"][0].tolist() == [[0, 2, 3], [0, 2, 3]]
    q[:, :, 3] = torch.tensor([8.0, 0.0])
    k[:, :, 3] = torch.tensor([-2.0, 0.0])  # now the newest token is the one attended to least
    _, state = bounded_attend(q, k, v, empty_bounded_cache(B, H, hs, dtype=F64), None, size=4, policy="tova")
    assert state["pos"][0, 0].tolist() == [0, 1, 2]


def test_h2o_keeps_the_heavy_hitters_of_each_head_and_the_recent_tokens():
    B, H, hs = 1, 2, 2
    k = torch.zeros(B, H, 3, hs, dtype=F64)
    k[:, 0] = _one_hot_keys([10.0, 0.0], [0.0, 10.0], [0.0, 0.0])
    k[:, 1] = _one_hot_keys([0.0, 10.0], [10.0, 0.0], [0.0, 0.0])
    q = torch.zeros(B, H, 3, hs, dtype=F64)
    q[:, :, :, 0] = 10.0  # every query looks along the first axis: head 0 at token 0, head 1 at token 1
    v = torch.randn(B, H, 3, hs, dtype=F64)
    _, state = bounded_attend(q, k, v, empty_bounded_cache(B, H, hs, dtype=F64), None, size=3, policy="h2o")
    # the most recent token (size // 2 = 1) stays; of tokens 0 and 1 each head keeps the one it attended to
    assert state["pos"][0].tolist() == [[0, 2], [1, 2]]
    assert state["score"][0, 1, 0] > 1.9  # token 1 of head 1: nearly all of queries 1 and 2


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
    state = model.memory_.groups[0].state
    positions = [v for name, v in state.items() if name.endswith(".pos")]
    assert positions and all(p.shape[-1] == 5 for p in positions)  # 75 tokens streamed, 5 kept per layer
    model.save(tmp_path / "m")
    back = load(tmp_path / "m")
    pd.testing.assert_frame_equal(back.predict(), model.predict())


def test_rsa_forecaster_takes_the_cache_options_and_names_a_bad_one():
    y = _series()
    model = RSAForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True, cache_size=4,
                          cache_policy="h2o", random_state=0).fit(y.iloc[:260]).update(y.iloc[260:])
    positions = [v for name, v in model.memory_.groups[0].state.items() if name.endswith(".pos")]
    assert positions and all(p.shape[-1] == 3 for p in positions)
    bad = RSAForecaster(h=8, input_size=32, patch_len=4, d_model=16, max_epochs=1, stream=True, cache_size=4,
                        cache_policy="lru")
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
