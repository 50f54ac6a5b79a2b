"""ONNX export (``model.to_onnx``) and serving without torch (``tsrsa.load_onnx``).

Each fixed-window kind is fitted small and exported once (the exporter takes seconds per graph); the
served forecasts must equal ``predict``'s within 1e-4 of each series' scale, for ``predict()``,
``predict(h)``, and ``predict(df=...)`` with one or several series and unseen ids, distribution losses
included (their graph outputs the parameters; the served model computes the mean and quantiles). Refusals name why
and what to do; edited files are refused on load; a process where ``import torch`` fails still serves.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from tests.conftest import serve_without_torch  # noqa: E402
import tsrsa  # noqa: E402
from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, TransformerForecaster  # noqa: E402

pytestmark = pytest.mark.slow  # every test here reads a torch.onnx export (3-14 s of CPU each)

H, L = 12, 24
SMALL = {"max_epochs": 1, "random_state": 0, "trainer": {"num_threads": 1}}
TINY = {"d_model": 8, "n_heads": 4, "n_layers": 1, "d_ff": 16}
KINDS = {
    "rsa": lambda: RSAForecaster(h=H, input_size=L, **TINY, **SMALL),
    "transformer": lambda: TransformerForecaster(h=H, input_size=L, **TINY, **SMALL),
    "lstm_quantile": lambda: LSTMForecaster(h=H, input_size=L, hidden_size=8, n_layers=1, loss="quantile",
                                            quantiles=[0.1, 0.9], **SMALL),
    "dlinear": lambda: DLinearForecaster(h=H, input_size=L, **SMALL),
    "dlinear_student_t": lambda: DLinearForecaster(h=H, input_size=L, loss="student_t", quantiles=[0.1, 0.9],
                                                   **SMALL),
}


def panel_frame(n: int = 3, length: int = 120, seed: int = 0) -> pd.DataFrame:
    """``n`` hourly series of different levels and spreads (ids s0, s1, ...)."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({
        "unique_id": f"s{i}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
        "y": 1000.0 * i + (3 + 5 * i) * np.sin(t / 4 + i) + rng.normal(size=length)}) for i in range(n)],
        ignore_index=True)


#: the tables of torch's ONNX functions built in this process (``torchlib_registry_built_once``)
TORCHLIB_TABLES: dict = {}


@pytest.fixture(scope="module", autouse=True)
def torchlib_registry_built_once():
    """One table of torch's ONNX functions for the exports of the tests: ``torch.onnx.export`` builds it anew
    from onnxscript's torchlib on every call (about 1 s of each export, whatever the network); each export gets
    a copy of the first one built (the same table: the exports pass no custom translations). Where torch's
    exporter is laid out otherwise, every export builds its own, as without this fixture."""
    try:
        from torch.onnx._internal.exporter import _registration
        build = _registration.ONNXRegistry.__dict__["from_torchlib"].__func__
    except (ImportError, AttributeError, KeyError):
        yield
        return

    def from_torchlib(cls, *args, **kwargs):
        key = (cls, args, tuple(sorted(kwargs.items())))
        if key not in TORCHLIB_TABLES:
            TORCHLIB_TABLES[key] = build(cls, *args, **kwargs)
        table = copy.copy(TORCHLIB_TABLES[key])
        table.functions = {name: list(functions) for name, functions in TORCHLIB_TABLES[key].functions.items()}
        return table

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_registration.ONNXRegistry, "from_torchlib", classmethod(from_torchlib))
        yield


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """kind -> (the fitted model, its served copy, the .onnx path)."""
    folder = tmp_path_factory.mktemp("onnx")
    df = panel_frame()
    (folder / "dlinear.onnx.json").write_text("an earlier export")  # overwrite=True replaces it
    out = {}
    for kind, make in KINDS.items():
        model = make().fit(df)
        path = model.to_onnx(folder / f"{kind}.onnx", overwrite=kind == "dlinear")
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


def scales(model, served) -> pd.Series:
    return pd.Series(served.memory.scale, index=served.memory.ids)


@pytest.mark.parametrize("kind", list(KINDS))
def test_served_forecast_equals_predict(exported, kind):
    model, served, _ = exported[kind]
    expected = model.predict()
    assert_same_forecast(expected, served.predict(), scales(model, served))
    assert_same_forecast(model.predict(5), served.predict(5), scales(model, served))
    if kind in ("lstm_quantile", "dlinear_student_t"):
        assert list(expected.columns) == ["unique_id", "ds", "yhat", "yhat_q10", "yhat_q90"]
        assert (served.predict()["yhat_q10"] < served.predict()["yhat_q90"]).all()


def test_a_distribution_is_served_from_its_parameters(exported):
    """The graph of a distribution loss outputs its parameters (scaled units); the columns are scipy's."""
    model, served, path = exported["dlinear_student_t"]
    record = json.loads(Path(f"{path}.json").read_text())
    assert record["output"] == "parameters" and record["distribution"] == {
        "name": "student_t", "parameters": ["loc", "scale", "df"], "quantiles": {"yhat_q10": 0.1, "yhat_q90": 0.9}}
    p = served.forecast_arrays(served.memory.tails, served.memory.loc, served.memory.scale)  # (S, H, 3)
    assert p.shape == (3, H, 3) and (p[..., 1] > 0).all() and (p[..., 2] > 2).all()  # scale > 0, df > 2
    forecast = served.predict()
    yhat = (p[..., 0] * served.memory.scale[:, None] + served.memory.loc[:, None]).ravel()
    np.testing.assert_allclose(forecast["yhat"], yhat)  # the mean: loc, restored


def test_a_count_distribution_is_served_as_predicted(tmp_path):
    rng = np.random.default_rng(0)
    counts = pd.DataFrame({"unique_id": np.repeat(["a", "b"], 80), "ds": np.tile(np.arange(80), 2),
                           "y": rng.poisson(np.repeat([3.0, 40.0], 80)).astype(float)})
    model = DLinearForecaster(h=H, input_size=L, loss="negative_binomial", quantiles=[0.25, 0.9], scaler=None,
                              **SMALL).fit(counts)
    served = tsrsa.load_onnx(model.to_onnx(tmp_path / "counts.onnx"), threads=1)
    expected, got = model.predict(), served.predict()
    assert list(got.columns) == ["unique_id", "ds", "yhat", "yhat_q25", "yhat_q90"]
    assert_same_forecast(expected, got, pd.Series([1.0, 1.0], index=["a", "b"]))
    assert (got["yhat_q90"] == np.round(got["yhat_q90"])).all()  # counts: whole numbers


@pytest.mark.parametrize("kind", list(KINDS))
def test_served_forecast_of_another_frame_equals_predict(exported, kind):
    model, served, _ = exported[kind]
    df = panel_frame(4, length=60, seed=1)  # s0..s2 known (their fitted statistics), s3 new (its own)
    df = df[df["unique_id"] != "s1"]
    scale = pd.Series([1.0, 10.0, 20.0], index=["s0", "s2", "s3"])  # the spread of each series, roughly
    assert_same_forecast(model.predict(df=df), served.predict(df=df), scale)


def test_the_batch_is_dynamic(exported):
    model, served, _ = exported["rsa"]
    df = panel_frame()
    one = df[df["unique_id"] == "s2"]
    assert_same_forecast(model.predict(df=one), served.predict(df=one), pd.Series({"s2": 13.0}))
    assert len(served.predict(df=df)) == 3 * H
    windows = np.tile(served.memory.tails, (7, 1))  # any batch: 21 windows
    out = served.forecast_arrays(windows, np.tile(served.memory.loc, 7), np.tile(served.memory.scale, 7))
    assert out.shape == (21, H, 1)
    np.testing.assert_allclose(out[:3], out[-3:])


def test_update_slides_the_windows_as_the_model_does(exported):
    fitted, _, path = exported["transformer"]
    model, served = copy.deepcopy(fitted), tsrsa.load_onnx(path, threads=1)
    later = panel_frame(length=150, seed=5).groupby("unique_id").tail(30)
    for chunk in (later.groupby("unique_id").head(7), later.groupby("unique_id").tail(23)):
        model.update(chunk)
        assert served.update(chunk) is served
        assert_same_forecast(model.predict(), served.predict(), scales(model, served))
    with pytest.raises(ValueError, match="overlaps what the model has seen"):
        served.update(later.groupby("unique_id").tail(2))


def test_served_model_checks_what_it_is_given(exported):
    _, served, _ = exported["dlinear"]
    with pytest.raises(ValueError, match=r"h=13 is above the horizon this model was trained for \(12\)"):
        served.predict(13)
    short = panel_frame(1, length=10)
    with pytest.raises(ValueError, match="look-back"):
        served.predict(df=short)
    daily = panel_frame(1, length=60).assign(ds=pd.date_range("2024-01-01", periods=60, freq="D"))
    with pytest.raises(ValueError, match="frequen"):
        served.predict(df=daily)


def test_export_refuses_what_it_cannot_serve(exported, tmp_path):
    df = panel_frame(2, length=100)
    with pytest.raises(Exception, match="not fitted"):
        DLinearForecaster(h=H, input_size=L).to_onnx(tmp_path / "m.onnx")
    normal = TransformerForecaster(h=H, input_size=L, loss="normal", stream=True, attention="linear", patch_len=4,
                                   **TINY, **SMALL).fit(df)
    with pytest.raises(ValueError, match="streams \\(stream=True\\) with loss='normal'.*fit with stream=False"):
        normal.to_onnx(tmp_path / "m.onnx")
    with pytest.raises(ValueError, match="ending in .onnx"):
        exported["dlinear"][0].to_onnx(tmp_path / "m.bin")
    assert not list(tmp_path.iterdir())  # nothing written by a refusal


def test_files_are_checked_on_load(exported, tmp_path):
    model, _, exported_path = exported["dlinear"]
    for name in ("m.onnx", "m.onnx.json", "m.onnx.npz"):
        shutil.copyfile(exported_path.with_name(exported_path.name + name[6:]), tmp_path / name)
    path = tmp_path / "m.onnx"
    with pytest.raises(ValueError, match="exists; pass overwrite=True"):
        model.to_onnx(path)
    record = json.loads((tmp_path / "m.onnx.json").read_text())
    assert record["opset"] == 18 and record["columns"] == {"yhat": 0} and record["model"] == "DLinearForecaster"
    assert tsrsa.load_onnx(path).predict().shape == (3 * H, 3)
    with open(tmp_path / "m.onnx.npz", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ValueError, match=r"m\.onnx\.npz is not the file that was exported"):
        tsrsa.load_onnx(path)
    (tmp_path / "m.onnx.npz").unlink()
    with pytest.raises(ValueError, match=r"m\.onnx\.npz is missing"):
        tsrsa.load_onnx(path)
    (tmp_path / "m.onnx.json").write_text("{")
    with pytest.raises(ValueError, match=r"m\.onnx\.json is not readable JSON"):
        tsrsa.load_onnx(path)




@pytest.mark.processes
@pytest.mark.parametrize("kind", ["lstm_quantile", "dlinear_student_t"])  # a distribution's quantiles: scipy's
def test_serving_runs_where_torch_cannot_be_imported(exported, tmp_path, kind):
    model, served, path = exported[kind]
    folder = tmp_path
    df = panel_frame(2, length=60, seed=3)
    df.to_pickle(folder / "in.pkl")
    run = serve_without_torch(folder, """
        served.predict(df=pd.read_pickle(sys.argv[2])).to_pickle(sys.argv[3])
        served.predict().to_pickle(sys.argv[4])
        """, path, folder / "in.pkl", folder / "df.pkl", folder / "fitted.pkl")
    assert run.returncode == 0, run.stderr
    scale = scales(model, served)
    assert_same_forecast(model.predict(df=df), pd.read_pickle(folder / "df.pkl"), scale)
    assert_same_forecast(model.predict(), pd.read_pickle(folder / "fitted.pkl"), scale)


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "serving.md"


def test_the_serving_guide_runs(tmp_path, monkeypatch):
    """docs/serving.md's examples (compile only in tests/test_docs.py, which runs without the onnx extra)."""
    monkeypatch.chdir(tmp_path)
    fence = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)```", re.S)
    namespace = {"__name__": "guide"}
    runs = [m["code"] for m in fence.finditer("\n" + GUIDE.read_text()) if "tests/test_onnx.py runs" in m["before"]]
    assert len(runs) == 2
    for code in runs:
        exec(compile(code, GUIDE.name, "exec"), namespace)  # noqa: S102 - our own documentation
    assert not list(tmp_path.iterdir())
