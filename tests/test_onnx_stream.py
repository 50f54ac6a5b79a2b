"""A streaming model's ONNX export: its one-token step with the recurrent state as inputs and outputs.

``load_onnx(path).update(df)`` must advance every series as the model's ``update`` does, over 100 new
steps in chunks that end inside and at the edges of patches, and ``predict(df=...)`` must stream a
frame as the model does, for each exported kind: linear attention, and RSA whose REM chains (complex
in the model) the graph carries as real pairs. Each kind is fitted small and exported once for the module;
the bounded caches (tests/test_onnx_cache.py), the unbounded ones (tests/test_onnx_unbounded.py) and fast
weights (tests/test_onnx_fast_weight.py) run the same checks.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from tests.conftest import serve_without_torch  # noqa: E402
import tsrsa  # noqa: E402
from tsrsa import RSAForecaster, TransformerForecaster  # noqa: E402
from tsrsa.nn.rem import RemHeads, rem_recurrent  # noqa: E402
from tsrsa.nn.rem_real import rem_recurrent_real  # noqa: E402
from test_onnx import torchlib_registry_built_once  # noqa: E402,F401 - one torchlib table for the module

pytestmark = pytest.mark.slow  # every test here reads a torch.onnx export (3-14 s of CPU each)

H, L, P = 12, 24, 4
SMALL = {"max_epochs": 1, "random_state": 0, "trainer": {"num_threads": 1}}
TINY = {"d_model": 8, "n_heads": 4, "n_layers": 1, "d_ff": 16}
STREAMS = {  # what each kind's export carries: linear attention's sums; RSA's T2R sums and REM chains
    "linear": lambda: TransformerForecaster(h=H, input_size=L, attention="linear", stream=True, patch_len=P,
                                            loss="quantile", quantiles=[0.1, 0.9], **TINY, **SMALL),
    "rsa_t2r": lambda: RSAForecaster(h=H, input_size=L, stream=True, patch_len=P, rem={"dilations": 3},
                                     attention_options={"t2r_features": 4}, **TINY, **SMALL),
}


def panel_frame(n: int = 3, length: int = 220, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({
        "unique_id": f"s{i}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
        "y": 100.0 * i + (2 + 3 * i) * np.sin(t / 4 + i) + rng.normal(size=length)}) for i in range(n)],
        ignore_index=True)


def largest_error(expected: pd.DataFrame, got: pd.DataFrame, scale: pd.Series) -> float:
    """The largest difference of the forecast columns, relative to each series' scale (frames must agree)."""
    assert list(got.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(got[["unique_id", "ds"]], expected[["unique_id", "ds"]])
    spread = expected["unique_id"].map(scale).to_numpy()
    return max(float((np.abs(got[c].to_numpy() - expected[c].to_numpy()) / spread).max())
               for c in expected.columns[2:])


@pytest.fixture(scope="module", params=list(STREAMS))
def streaming(request, tmp_path_factory):
    """A streaming model of each kind fitted on the first 118 steps, its export's path, and the frame."""
    df = panel_frame()
    model = STREAMS[request.param]().fit(df.groupby("unique_id").head(118))
    return model, model.to_onnx(tmp_path_factory.mktemp("stream") / f"{request.param}.onnx"), df


def assert_update_over_100_steps_equals_the_models(fitted, path, df) -> None:
    """``served.update`` over 100 new steps, in chunks that end inside and at the edges of patches, forecasts
    as the model's ``update`` does after every chunk (within 1e-4 of each series' scale)."""
    model, served = copy.deepcopy(fitted), tsrsa.load_onnx(path, threads=1)
    assert served.streams and list(served.columns) == list(model.predict().columns[2:])
    scale = pd.Series(served.memory.scale, index=served.memory.ids)
    assert largest_error(model.predict(), served.predict(), scale) <= 1e-4
    later = df.groupby("unique_id").tail(102)
    stamps = np.sort(later["ds"].unique())
    start, worst = 0, 0.0
    for n in [1, 1, 1, 2, 3, 4, 5, 7, 1, 8, 9, 3, 13, 2, 40]:  # 100 steps: partial patches, whole ones, several
        chunk = later[later["ds"].isin(stamps[start:start + n])]
        start += n
        model.update(chunk)
        assert served.update(chunk) is served
        worst = max(worst, largest_error(model.predict(), served.predict(), scale))
        assert largest_error(model.predict(5), served.predict(5), scale) <= 1e-4
    assert start == 100 and worst <= 1e-4
    assert (served.predict()["ds"].iloc[0] - df["ds"].iloc[217]) == pd.Timedelta("1h")


def assert_streamed_frames_equal_the_models(fitted, path, df) -> None:
    """``served.predict(df=...)`` streams a frame (known and new ids) and ``update(..., new_ids="add")`` a new
    series from its first step as the model does; refused updates change nothing."""
    model, served = copy.deepcopy(fitted), tsrsa.load_onnx(path, threads=1)
    other = panel_frame(4, length=90, seed=2)
    other = other[other["unique_id"] != "s0"]  # s1, s2 known (their fitted statistics), s3 new (its own)
    scale = pd.Series([5.0, 8.0, 11.0], index=["s1", "s2", "s3"])
    assert largest_error(model.predict(df=other), served.predict(df=other), scale) <= 1e-4
    new = panel_frame(5, length=60, seed=3).query("unique_id == 's4'")
    model.update(new, new_ids="add")
    served.update(new, new_ids="add")
    scale = pd.Series([1, 5, 8, 14.0], index=["s0", "s1", "s2", "s4"])
    assert largest_error(model.predict(), served.predict(), scale) <= 1e-4
    with pytest.raises(ValueError, match="was not seen in fit"):
        served.update(panel_frame(7, length=30).query("unique_id == 's6'"))
    s0 = df[df["unique_id"] == "s0"]
    with pytest.raises(ValueError, match="overlaps"):
        served.update(s0.iloc[110:125])
    with pytest.raises(ValueError, match="leaves a gap"):
        served.update(s0.tail(3))
    assert largest_error(model.predict(), served.predict(), scale) <= 1e-4  # a refused update changes nothing


def test_update_over_100_steps_equals_the_models(streaming):
    assert_update_over_100_steps_equals_the_models(*streaming)


def test_streaming_a_frame_and_new_series_equal_the_models(streaming):
    assert_streamed_frames_equal_the_models(*streaming)


@pytest.mark.parametrize("streaming", ["rsa_t2r"], indirect=True)
def test_rsa_graph_carries_the_rem_chains_as_real_pairs(streaming):
    fitted, path, _ = streaming
    names = tsrsa.load_onnx(path, threads=1).state.names
    chains = fitted.network_.init_state(1).tensors()["blocks.0.rem"]  # (1, H_rem, d_max, hs) complex
    assert chains.is_complex() and chains.shape[1:3] == (4, 3)  # four REM heads, the dilated one's 3 chains
    assert "blocks.0.rem" in names and "blocks.0.kv" in names
    with np.load(f"{path}.npz") as arrays:
        assert arrays["state.blocks.0.rem"].shape == (3, *chains.shape[1:], 2)  # per series, (real, imaginary)
        assert arrays["state.blocks.0.rem"].dtype == np.float32 and np.abs(arrays["state.blocks.0.rem"]).max() > 0


def test_the_real_rem_recurrence_equals_the_complex_one():
    """``rem_recurrent_real`` (the exported step's) against ``rem_recurrent`` (the model's) over blocks of
    1 to 5 tokens: a negative regular decay, cyclic pairs, dilations 2 and 3."""
    g = torch.Generator().manual_seed(0)
    heads = RemHeads(torch.tensor([0, 1, 2, 0, 1]), torch.tensor([-0.7, 0.9, 0.9, 0.5, 0.8]),
                     torch.tensor([0.0, 0.6, 0.6, 0.0, 2.5]), torch.tensor([1, 1, 1, 3, 2]))
    z = torch.zeros(2, 5, 3, 4, dtype=torch.complex64)
    pairs = torch.view_as_real(z).clone()
    for n in [1, 1, 3, 2, 1, 5, 1, 1] * 4:
        v = torch.randn(2, 5, n, 4, generator=g)
        o, z = rem_recurrent(v, heads, state=z)
        o_real, pairs = rem_recurrent_real(v, heads, state=pairs)
        torch.testing.assert_close(o_real, o, atol=2e-6, rtol=1e-5)
        torch.testing.assert_close(pairs, torch.view_as_real(z), atol=2e-6, rtol=1e-5)
    assert z.abs().max() > 1  # the chains carried something


@pytest.mark.processes
def test_a_stream_is_served_where_torch_cannot_be_imported(streaming, tmp_path):
    fitted, path, df = streaming
    model = copy.deepcopy(fitted)
    new = df.groupby("unique_id").nth(list(range(118, 131)))  # 13 steps: three tokens and one waiting
    new.to_pickle(tmp_path / "new.pkl")
    run = serve_without_torch(tmp_path, """
        served.update(pd.read_pickle(sys.argv[2])).predict().to_pickle(sys.argv[3])
        """, path, tmp_path / "new.pkl", tmp_path / "out.pkl")
    assert run.returncode == 0, run.stderr
    scale = pd.Series(model.memory_.scale, index=model.memory_.ids)
    assert largest_error(model.update(new).predict(), pd.read_pickle(tmp_path / "out.pkl"), scale) <= 1e-4
