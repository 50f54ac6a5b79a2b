"""ONNX export and serving of fixed-window models fitted with covariates.

The covariate inputs of the network (look-back channels, the horizon's known-future channels, numeric
statics, categorical statics' codes) are graph inputs; the served model encodes them from the frames it is
given (``df``, ``future_df``) and the history it keeps, with the fitted encoder saved in the export. Its
forecasts must equal ``predict``'s within 1e-4 of each series' scale: past numeric covariates, known-future
ones read from ``future_df``, numeric and categorical statics, calendar features of a datetime index, and the
decoder tokens of ``known_future="tokens"``; after ``update`` too. What is refused says why.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from tests.conftest import serve_without_torch  # noqa: E402
from tests.test_onnx import torchlib_registry_built_once  # noqa: E402,F401  (one table of ONNX functions)
import tsrsa  # noqa: E402
from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, TransformerForecaster  # noqa: E402

pytestmark = pytest.mark.slow  # every test here reads a torch.onnx export (a few seconds of CPU each)

H, L, LENGTH = 6, 12, 80
#: steps drawn for every series (a history and the steps after it are cut from them)
TOTAL = 200
SMALL = {"max_epochs": 2, "learning_rate": 0.01, "random_state": 0, "trainer": {"num_threads": 1}}
TINY = {"d_model": 8, "n_heads": 4, "n_layers": 1, "d_ff": 16}


def covariate_frames(n: int = 3, length: int = LENGTH, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history, the next H rows): ``n`` hourly series of different levels, a past driver ``p``, a known-future
    driver ``f``, a numeric static ``size`` and a categorical static ``kind`` (ids s0, s1, ...); the first
    ``length`` steps of the same draws whatever ``length``."""
    rng = np.random.default_rng(seed)
    t = np.arange(TOTAL)
    full = pd.concat([pd.DataFrame({
        "unique_id": f"s{i}", "ds": pd.date_range("2024-01-01", periods=TOTAL, freq="h"),
        "y": 100.0 * i + (3 + 2 * i) * np.sin(t / 4 + i) + 4 * np.cos(t / 3 + i) + rng.normal(size=TOTAL),
        "p": rng.normal(size=TOTAL) * (i + 1), "f": 10 * np.cos(t / 3 + i) + 5,
        "size": 2.5 * i + 1, "kind": ["a", "b", "a", "c"][i % 4]}) for i in range(n)], ignore_index=True)
    full = full.groupby("unique_id").head(length + H).reset_index(drop=True)
    history = full.groupby("unique_id").head(length).reset_index(drop=True)
    return history, full.groupby("unique_id").tail(H).reset_index(drop=True)


KINDS = {
    # past and known-future numeric columns (the known-future ones through the horizon term)
    "dlinear_past_future": lambda: DLinearForecaster(
        h=H, input_size=L, covariates=tsrsa.Covariates(past=["p"], future=["f"]), **SMALL),
    # statics (numeric and categorical), the calendar of a datetime index, a past column; a quantile head
    "rsa_static_calendar": lambda: RSAForecaster(
        h=H, input_size=L, covariates=tsrsa.Covariates(past=["p"], static=["size", "kind"], calendar="auto"),
        loss="quantile", quantiles=[0.1, 0.9], **TINY, **SMALL),
    # known-future values as decoder tokens: a forecast of any length reads the whole horizon's
    "transformer_tokens": lambda: TransformerForecaster(
        h=H, input_size=L, covariates=tsrsa.Covariates(future=["f"], static=["kind"]), known_future="tokens",
        **TINY, **SMALL),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """kind -> (the fitted model, its served copy, the .onnx path)."""
    folder = tmp_path_factory.mktemp("onnx_covariates")
    history, _ = covariate_frames()
    out = {}
    for kind, make in KINDS.items():
        model = make().fit(history)
        path = model.to_onnx(folder / f"{kind}.onnx")
        out[kind] = (model, tsrsa.load_onnx(path, threads=1), path)
    return out


def assert_same_forecast(expected: pd.DataFrame, got: pd.DataFrame, scale: pd.Series) -> None:
    """Same frame (columns, ids, timestamps) and values within 1e-4 of each series' scale."""
    assert list(got.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(got[["unique_id", "ds"]], expected[["unique_id", "ds"]])
    spread = expected["unique_id"].map(scale).to_numpy()
    for column in expected.columns[2:]:
        error = np.abs(got[column].to_numpy() - expected[column].to_numpy()) / spread
        assert error.max() <= 1e-4, (column, error.max())


def scales(served) -> pd.Series:
    return pd.Series(served.memory.scale, index=served.memory.ids)


@pytest.mark.parametrize("kind", list(KINDS))
def test_served_forecast_equals_predict(exported, kind):
    model, served, _ = exported[kind]
    _, future = covariate_frames()
    future_df = future if model.covariates_.spec.future else None
    expected = model.predict(future_df=future_df)
    assert_same_forecast(expected, served.predict(future_df=future_df), scales(served))
    assert_same_forecast(model.predict(4, future_df=future_df), served.predict(4, future_df=future_df),
                         scales(served))


@pytest.mark.parametrize("kind", list(KINDS))
def test_served_forecast_of_another_frame_equals_predict(exported, kind):
    """``predict(df=...)``: known ids keep their fitted statistics, an unseen id (here with other values and
    statics than any fitted series) its own."""
    model, served, _ = exported[kind]
    history, future = covariate_frames(length=50, seed=3)
    for frame in (history, future):
        frame["unique_id"] = frame["unique_id"].replace({"s2": "new"})
    future_df = future if model.covariates_.spec.future else None
    expected = model.predict(df=history, future_df=future_df)
    got = served.predict(df=history, future_df=future_df)
    assert_same_forecast(expected, got, history.groupby("unique_id")["y"].std())
    assert set(got["unique_id"]) == {"s0", "s1", "new"}


def moved_covariates(history: pd.DataFrame, future: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """The frames with one kind of covariate changed and the target left as it is: {what: (history, future)}."""
    swapped = history.assign(kind=history["kind"].replace({"a": "b", "b": "a"}),
                             size=history.groupby("unique_id")["size"].transform("first").map(lambda v: 9.0 - v))
    later = [frame.assign(ds=frame["ds"] + pd.Timedelta(hours=7)) for frame in (history, future)]  # the calendar
    return {"past": (history.assign(p=-history["p"]), future), "future": (history, future.assign(f=-future["f"])),
            "static": (swapped, future), "calendar": tuple(later)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_served_forecast_follows_the_covariates(exported, kind):
    """Each covariate the model reads moves its forecast (by far more than the tolerance of these tests), and the
    served forecast moves with it."""
    model, served, _ = exported[kind]
    spec = model.covariates_.spec
    reads = {"past": bool(spec.past), "future": bool(spec.future), "static": bool(spec.static),
             "calendar": spec.calendar is not None}
    history, future = covariate_frames()
    before = model.predict(df=history, future_df=future if spec.future else None)
    for what, (df, future_df) in moved_covariates(history, future).items():
        if not reads[what]:
            continue
        future_df = future_df if spec.future else None
        expected = model.predict(df=df, future_df=future_df)
        moved = np.abs(expected["yhat"] - before["yhat"]) / expected["unique_id"].map(scales(served))
        assert moved.max() > 1e-2, what
        assert_same_forecast(expected, served.predict(df=df, future_df=future_df), scales(served))


def test_the_export_holds_the_encoder_and_the_covariate_inputs(exported):
    model, served, path = exported["rsa_static_calendar"]
    record = json.loads(path.with_name(path.name + ".json").read_text())
    # the calendar's features are known-future channels: the horizon reads them without a future_df
    assert record["inputs"] == ["tails", "loc", "scale", "past", "future", "static_num", "static_cat"]
    assert record["covariates"]["encoder"] == model.covariates_.to_json()
    assert record["covariates"]["encoder"]["generated"]  # the calendar features of hourly data
    _, _, tokens_path = exported["transformer_tokens"]
    tokens = json.loads(tokens_path.with_name(tokens_path.name + ".json").read_text())["covariates"]
    assert tokens["inputs"] == ["past", "future", "static_cat"] and tokens["whole_horizon"] is True
    memory = served.memory
    np.testing.assert_array_equal(memory.covariates, model.memory_.covariates)
    np.testing.assert_array_equal(memory.static_cat, model.memory_.static_cat)
    with pytest.raises(ValueError, match=r"reads the covariate inputs \['past', 'future', 'static_num', 'static_cat'\]"):
        served.forecast_arrays(memory.tails, memory.loc, memory.scale)


def test_served_update_equals_update(exported):
    """``update`` slides each series' encoded covariates with its values; a new id joins with its history."""
    model, _, path = exported["dlinear_past_future"]
    model, served = copy.deepcopy(model), tsrsa.load_onnx(path, threads=1)  # copies the other tests do not see
    history, future = covariate_frames(length=LENGTH + 2 * H)
    new = history.groupby("unique_id").tail(2 * H)
    new = new[(new["unique_id"] != "s2") | (new["ds"] < new["ds"].max() - pd.Timedelta(hours=H - 1))]  # s2: H
    s2 = history[history["unique_id"] == "s2"]
    extra = s2.head(LENGTH).assign(unique_id="extra")  # a new series, its whole history
    model.update(pd.concat([new, extra]), new_ids="add")
    served.update(pd.concat([new, extra]), new_ids="add")
    steps = pd.concat([future, history.groupby("unique_id").tail(H),  # what follows each series' new end
                       s2.iloc[LENGTH:LENGTH + H].assign(unique_id="extra")])
    assert_same_forecast(model.predict(future_df=steps), served.predict(future_df=steps), scales(served))
    np.testing.assert_array_equal(served.memory.covariates, model.memory_.covariates)
    np.testing.assert_array_equal(served.memory.tails, model.memory_.tails)


def test_what_the_served_model_refuses(exported):
    _, served, _ = exported["dlinear_past_future"]
    _, future = covariate_frames()
    with pytest.raises(ValueError, match=r"reads the known-future covariates \['f'\]: pass future_df="):
        served.predict()
    with pytest.raises(ValueError, match=r"future_df has no row for \('s2'"):
        served.predict(future_df=future[future["unique_id"] != "s2"])
    _, rsa_served, _ = exported["rsa_static_calendar"]
    with pytest.raises(ValueError, match="declares no future covariates"):
        rsa_served.predict(future_df=future)
    history, _ = covariate_frames()
    with pytest.raises(ValueError, match=r"missing the declared covariate column\(s\) \['p'\]"):
        served.predict(df=history.drop(columns="p"))
    changed = history.groupby("unique_id").tail(1).assign(size=99.0)
    changed["ds"] = changed["ds"] + pd.Timedelta(hours=1)
    before = rsa_served.memory.tails.copy()
    with pytest.raises(ValueError, match="static covariate 'size' of series 's0' was 1 in fit"):
        rsa_served.update(changed)
    np.testing.assert_array_equal(rsa_served.memory.tails, before)  # left as it was


def test_categories_over_integer_time(tmp_path):
    """A categorical time-varying column (one indicator per category seen in fit, none for an unseen one with
    ``unknown_categories="unknown"``), the id as a static, integer timestamps."""
    history, _ = covariate_frames(length=LENGTH + H)
    history = history.assign(ds=history.groupby("unique_id").cumcount(),
                             weather=np.where(history["p"] > 0, "sun", "rain"))
    covariates = tsrsa.Covariates(past=["weather"], static=["unique_id"], unknown_categories="unknown")
    model = LSTMForecaster(h=H, input_size=L, hidden_size=8, n_layers=1, covariates=covariates,
                           **SMALL).fit(history.groupby("unique_id").head(LENGTH))
    served = tsrsa.load_onnx(model.to_onnx(tmp_path / "m.onnx"), threads=1)
    assert served.covariates.inputs == ("past", "static_cat")
    assert_same_forecast(model.predict(), served.predict(), scales(served))
    stormy = history.assign(weather=history["weather"].where(history.index % 5 > 0, "storm"),
                            unique_id=history["unique_id"].replace({"s1": "new"}))
    assert_same_forecast(model.predict(df=stormy), served.predict(df=stormy), stormy.groupby("unique_id")["y"].std())


def test_streaming_with_covariates_is_refused(tmp_path):
    history, _ = covariate_frames(2)
    model = TransformerForecaster(h=H, input_size=L, stream=True, attention="linear", patch_len=4,
                                  covariates=tsrsa.Covariates(past=["p"]), **TINY, **SMALL).fit(history)
    with pytest.raises(ValueError, match=r"streams \(stream=True\) and reads covariates \(p\).*stream=False"):
        model.to_onnx(tmp_path / "m.onnx")
    assert not list(tmp_path.iterdir())  # nothing written by a refusal


def test_served_without_torch(exported, tmp_path):
    """The covariates are encoded with numpy and pandas: a process where importing torch fails serves them."""
    model, _, path = exported["rsa_static_calendar"]
    _, _, tokens_path = exported["transformer_tokens"]
    history, future = covariate_frames()
    history.to_pickle(tmp_path / "history.pkl")
    future.to_pickle(tmp_path / "future.pkl")
    done = serve_without_torch(tmp_path, """
        history, future = pd.read_pickle(sys.argv[3]), pd.read_pickle(sys.argv[4])
        served.predict(df=history).to_pickle(sys.argv[5])
        tsrsa.load_onnx(sys.argv[2], threads=1).predict(3, future_df=future).to_pickle(sys.argv[6])
        """, path, tokens_path, tmp_path / "history.pkl", tmp_path / "future.pkl", tmp_path / "a.pkl",
        tmp_path / "b.pkl")
    assert done.returncode == 0, done.stderr
    served = tsrsa.load_onnx(path, threads=1)
    assert_same_forecast(model.predict(df=history), pd.read_pickle(tmp_path / "a.pkl"), scales(served))
    tokens_model = exported["transformer_tokens"][0]
    assert_same_forecast(tokens_model.predict(3, future_df=future), pd.read_pickle(tmp_path / "b.pkl"),
                         scales(served))


def test_the_guide_example_runs(tmp_path, monkeypatch):
    """docs/serving.md's covariates example."""
    guide = Path(__file__).resolve().parents[1] / "docs" / "serving.md"
    monkeypatch.chdir(tmp_path)
    fence = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)```", re.S)
    runs = [m["code"] for m in fence.finditer("\n" + guide.read_text())
            if "tests/test_onnx_covariates.py runs" in m["before"]]
    assert len(runs) == 1
    exec(compile(runs[0], guide.name, "exec"), {"__name__": "guide"})  # noqa: S102 - our own documentation
    assert not list(tmp_path.iterdir())
