"""Loading: files written, format fixtures, edited, missing and inconsistent files, the class
whitelist, the device. (Where a model may be saved, and saving all or nothing: test_model_folder.py.)"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import LSTMForecaster, SeasonalNaiveForecaster, TransformerForecaster
from tsrsa.estimator.persistence import CONFIG_CHECKSUM, FORMAT_VERSION, config_checksum

from conftest import make_panel

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = LSTMForecaster(h=3, input_size=6, patch_len=2, hidden_size=4, n_layers=1, max_epochs=1, random_state=0)
    model.fit(make_panel(n_series=2, length=30))
    path = tmp_path_factory.mktemp("saved") / "model"
    model.save(path)
    return model, path


def _copy(src: Path, dst: Path) -> Path:
    return Path(shutil.copytree(src, dst))


def _forge(path: Path, config: dict | None = None) -> None:
    """Rewrite config.json (``config``, or the file's own) with every checksum recomputed: what an
    edit that also forges the checksums leaves, so that the checks behind them are reached."""
    config = json.loads((path / "config.json").read_text()) if config is None else config
    config["files"] = {name: hashlib.sha256((path / name).read_bytes()).hexdigest() if (path / name).is_file()
                       else digest for name, digest in config["files"].items()}
    if "sizes" in config:
        config["sizes"] = {name: (path / name).stat().st_size if (path / name).is_file() else size
                           for name, size in config["sizes"].items()}
    if CONFIG_CHECKSUM in config:
        config[CONFIG_CHECKSUM] = config_checksum(config)
    (path / "config.json").write_text(json.dumps(config, indent=1))


def _edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    for dotted, value in changes.items():
        *outer, last = dotted.split("__")
        target = data
        for key in outer:
            target = target[key]
        target[last] = value
    path.write_text(json.dumps(data, indent=1))


def test_directory_layout_and_config(saved):
    model, path = saved
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "config.json", "state.json", "weights.pt"]
    config = json.loads((path / "config.json").read_text())
    assert config["format_version"] == FORMAT_VERSION
    assert config["class"] == "LSTMForecaster"
    assert config["params"]["hidden_size"] == 4
    assert {"tsrsa", "torch", "numpy", "pandas", "python"} <= set(config["versions"])
    assert set(config["files"]) == {"state.json", "arrays.npz", "weights.pt"}
    assert config[CONFIG_CHECKSUM] == config_checksum(config)
    weights = torch.load(path / "weights.pt", weights_only=True)
    assert set(weights) == set(model.network_.state_dict())


SAVED = sorted((p.parent.name, p.name) for p in FIXTURES.glob("format_v*/*") if p.is_dir())


def test_every_format_version_has_fixtures():
    assert {version for version, _ in SAVED} == {f"format_v{v}" for v in range(1, FORMAT_VERSION + 1)}


@pytest.mark.parametrize("version,name", SAVED)
def test_models_saved_by_every_format_version_still_load(version, name):
    path = FIXTURES / version / name
    model = tsrsa.load(path)
    expected = pd.read_csv(path / "expected.csv", parse_dates=["ds"])
    if getattr(model, "loss", None) == "quantile" and model.quantiles is None and "yhat_q50" in expected:
        # made before the default levels stopped repeating the median as yhat_q50 (CHANGELOG)
        np.testing.assert_array_equal(expected.pop("yhat_q50"), expected["yhat"])
    got = model.predict()
    assert list(got.columns) == list(expected.columns)
    np.testing.assert_allclose(got.drop(columns=["unique_id", "ds"]).to_numpy(),
                               expected.drop(columns=["unique_id", "ds"]).to_numpy(), rtol=1e-5)
    assert (got["ds"].to_numpy() == expected["ds"].to_numpy()).all()


STREAMS = [(version, name) for version, name in SAVED if name.endswith("_stream")]


@pytest.mark.parametrize("version,name", STREAMS)
def test_a_saved_stream_loads_into_typed_states_and_saves_under_the_same_names(version, name, tmp_path):
    """The flat names of formats 2 to 4 (``stream.{group}.blocks.{i}.k`` ...) load, through the states' one
    path, into typed states that hold the saved arrays bit for bit, and save back under the same names."""
    from tsrsa.nn import RSAState, StreamingState

    path = FIXTURES / version / name

    def stream_arrays(folder):
        with np.load(folder / "arrays.npz") as npz:
            return {k: npz[k] for k in npz.files
                    if k.startswith("stream.") and k.split(".")[1].isdigit() and k.split(".")[2] != "rows"}

    saved = stream_arrays(path)
    assert any(".blocks.0." in k for k in saved)
    model = tsrsa.load(path)
    flat = {}
    for i, group in enumerate(model.memory_.groups):
        assert isinstance(group.state, StreamingState)
        assert all(isinstance(layer, RSAState) for layer in group.state.blocks)
        flat.update({f"stream.{i}.{k}": t.numpy() for k, t in group.state.tensors().items()})
    assert sorted(flat) == sorted(saved)
    for key, value in saved.items():
        assert flat[key].dtype == value.dtype and np.array_equal(flat[key], value), key
    model.save(tmp_path / "again")
    again = stream_arrays(tmp_path / "again")
    assert sorted(again) == sorted(saved) and all(np.array_equal(again[k], saved[k]) for k in saved)


@pytest.mark.parametrize("target,damage", [
    ("weights.pt", lambda b: b[:-10] + bytes(10)),
    ("arrays.npz", lambda b: b[:100]),
    ("state.json", lambda b: b.replace(b'"h"', b'"D"')),
    ("config.json", lambda b: b.replace(b'"hidden_size": 4', b'"hidden_size": 5')),
])
def test_modified_files_are_refused_by_name(saved, tmp_path, target, damage):
    path = _copy(saved[1], tmp_path / "m")
    before = (path / target).read_bytes()
    (path / target).write_bytes(damage(before))
    assert (path / target).read_bytes() != before
    with pytest.raises(ValueError, match=f"{target} does not match the checksum.*restore the files as they were saved"):
        tsrsa.load(path)


@pytest.fixture(scope="module")
def tiny_transformer(tmp_path_factory):
    model = TransformerForecaster(h=3, input_size=8, patch_len=4, d_model=4, n_heads=1, n_layers=1, d_ff=4,
                                  max_epochs=1, random_state=0)
    model.fit(make_panel(n_series=2, length=30))
    path = tmp_path_factory.mktemp("transformer") / "model"
    model.save(path)
    return model, path


@pytest.mark.parametrize("param,value", [("d_model", 8), ("input_size", 12), ("time_col", "when"), ("h", 4)])
def test_an_edited_config_is_caught_by_its_checksum(tiny_transformer, tmp_path, param, value):
    model, saved_path = tiny_transformer
    before = model.predict()["yhat"].to_numpy()
    path = _copy(saved_path, tmp_path / "m")
    _edit_json(path / "config.json", **{f"params__{param}": value})
    with pytest.raises(ValueError, match=r"config.json does not match the checksum recorded at saving: it was "
                                         r"modified or corrupted; restore the files"):
        tsrsa.load(path)
    assert np.array_equal(model.predict()["yhat"].to_numpy(), before)
    config = json.loads((path / "config.json").read_text())
    del config[CONFIG_CHECKSUM]  # a checksum taken away is no way round it
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="config.json has no checksum of its own"):
        tsrsa.load(path)


@pytest.mark.parametrize("fixture,param,value,says", [
    ("format_v1/transformer", "d_model", 8, "network with d_model=8, but the network saved in state.json and "
                                            "weights.pt has d_model=4"),
    ("format_v3/transformer", "input_size", 12, "look-back of input_size=12 steps, but the look-back saved in "
                                                "arrays.npz holds 8"),
    ("format_v3/lstm", "input_size", None, "look-back of input_size=None ("),
    ("format_v3/rsa_stream", "h", 4, "network with h=4, but the network saved in state.json and weights.pt has h=3"),
    ("format_v2/lstm", "hidden_size", 8, "hidden_size=8"),
    ("format_v3/transformer", "loss", "mse", "n_outputs=1"),
    ("format_v2/naive", "season_length", 7, "season_length=7, but the season saved in arrays.npz holds 6 steps"),
    ("format_v3/transformer_covariates", "id_col", "series", "id_col='series'"),
    ("format_v3/transformer_covariates", "past_covariates", ["price"], "past=('price',)"),
    ("format_v3/lstm", "past_covariates", ["price"], "declare covariates, but the model was fitted without them"),
])
def test_an_edited_config_of_an_earlier_format_is_caught_by_consistency(tmp_path, fixture, param, value, says):
    """Formats 1 to 3 have no checksum of config.json: its parameters are held against the other files."""
    path = _copy(FIXTURES / fixture, tmp_path / "m")
    before = tsrsa.load(path).predict()
    _edit_json(path / "config.json", **{f"params__{param}": value})
    with pytest.raises(ValueError) as caught:
        tsrsa.load(path)
    message = str(caught.value)
    assert f"{path / 'config.json'} does not match the model saved beside it" in message
    assert says in message and "restore the config.json saved with the other files" in message
    _copy(FIXTURES / fixture, tmp_path / "fresh")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "fresh").predict(), before)


def test_an_edited_h_of_a_naive_model_of_an_earlier_format_forecasts_that_many_steps(tmp_path):
    """A naive model has no head: its horizon is a parameter only, and an edited one works as any other."""
    path = _copy(FIXTURES / "format_v3" / "naive", tmp_path / "m")
    _edit_json(path / "config.json", params__h=5)
    assert len(tsrsa.load(path).predict()) == 2 * 5


@pytest.mark.parametrize("missing", ["weights.pt", "state.json", "arrays.npz"])
def test_a_missing_file_is_named(tiny_transformer, tmp_path, missing):
    model, saved_path = tiny_transformer
    before = model.predict()["yhat"].to_numpy()
    path = _copy(saved_path, tmp_path / "m")
    (path / missing).unlink()
    with pytest.raises(ValueError, match=f"{missing} is missing; restore the files as they were saved"):
        tsrsa.load(path)
    assert np.array_equal(model.predict()["yhat"].to_numpy(), before)


def test_a_file_left_from_another_model_is_refused(tiny_transformer, tmp_path):
    naive = SeasonalNaiveForecaster(h=3, season_length=6).fit(make_panel(n_series=2, length=30))
    naive.save(tmp_path / "m")
    shutil.copy(tiny_transformer[1] / "weights.pt", tmp_path / "m" / "weights.pt")
    with pytest.raises(ValueError, match=r"weights.pt is not part of the SeasonalNaiveForecaster saved in .*: "
                                         r"remove it, or save the model again into a new folder"):
        tsrsa.load(tmp_path / "m")
    (tmp_path / "m" / "weights.pt").unlink()
    (tmp_path / "m" / "notes.txt").write_text("mine")  # a file of another name is not read at all
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "m").predict(), naive.predict())


def test_the_weights_listed_must_be_those_of_the_class(tiny_transformer, tmp_path):
    path = _copy(tiny_transformer[1], tmp_path / "m")
    config = json.loads((path / "config.json").read_text())
    del config["files"]["weights.pt"]
    (path / "weights.pt").unlink()
    _forge(path, config)
    with pytest.raises(ValueError, match="config.json lists no weights.pt, but a TransformerForecaster has network "
                                         "weights"):
        tsrsa.load(path)
    naive = SeasonalNaiveForecaster(h=3, season_length=6).fit(make_panel(n_series=2, length=30))
    naive.save(tmp_path / "naive")
    shutil.copy(tiny_transformer[1] / "weights.pt", tmp_path / "naive" / "weights.pt")
    config = json.loads((tmp_path / "naive" / "config.json").read_text())
    config["files"]["weights.pt"] = ""
    _forge(tmp_path / "naive", config)
    with pytest.raises(ValueError, match="config.json lists weights.pt, but a SeasonalNaiveForecaster has no network"):
        tsrsa.load(tmp_path / "naive")


def test_a_network_configuration_that_the_weights_do_not_fit_is_refused(tiny_transformer, tmp_path):
    """state.json and weights.pt that disagree (both edited, checksums forged): named, no torch traceback."""
    path = _copy(tiny_transformer[1], tmp_path / "m")
    _edit_json(path / "state.json", network__d_model=8)
    _edit_json(path / "config.json", params__d_model=8)
    _forge(path)
    with pytest.raises(ValueError, match=r"weights.pt does not match the network that .*state.json describes "
                                         r"\(.*size mismatch.*\); restore the files"):
        tsrsa.load(path)


def test_arrays_for_other_series_are_refused(tiny_transformer, tmp_path):
    path = _copy(tiny_transformer[1], tmp_path / "m")
    state = json.loads((path / "state.json").read_text())
    state["ids"]["values"] = state["ids"]["values"][:1]
    (path / "state.json").write_text(json.dumps(state))
    _forge(path)
    with pytest.raises(ValueError, match="arrays.npz holds 'tails' for a different number of series than the 1 ids"):
        tsrsa.load(path)


def test_unreadable_or_foreign_configs(saved, tmp_path):
    path = _copy(saved[1], tmp_path / "m")
    config = json.loads((path / "config.json").read_text())

    def write(**changes):
        _forge(path, {**json.loads(json.dumps(config)), **changes})

    write(**{"class": "os.system"})
    with pytest.raises(ValueError, match="class 'os.system', which is not a tsrsa forecaster"):
        tsrsa.load(path)
    write(format_version=FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match="newer tsrsa"):
        tsrsa.load(path)
    write(format_version=3)
    with pytest.raises(ValueError, match=f"says format 3, which has no {CONFIG_CHECKSUM}: it was modified"):
        tsrsa.load(path)
    write(files={**config["files"], "../../etc/passwd": "x"})
    with pytest.raises(ValueError, match="unexpected file"):
        tsrsa.load(path)
    write(params={**config["params"], "bogus": 1})
    with pytest.raises(ValueError, match="parameters that LSTMForecaster does not take"):
        tsrsa.load(path)
    write(params={**config["params"], "hidden_size": "wide"})
    with pytest.raises(ValueError, match="config.json holds parameters that describe no fitted model"):
        tsrsa.load(path)
    (path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json is unreadable or corrupted"):
        tsrsa.load(path)
    (path / "config.json").unlink()
    with pytest.raises(ValueError, match="config.json is missing"):
        tsrsa.load(path)
    with pytest.raises(ValueError, match="is not a directory"):
        tsrsa.load(tmp_path / "nowhere")


def test_weights_must_be_plain_tensors(saved, tmp_path):
    """A weights file holding a pickled object is refused even when its checksum is updated."""
    path = _copy(saved[1], tmp_path / "m")
    torch.save({"lstm.weight": object}, path / "weights.pt")
    _forge(path)
    with pytest.raises(ValueError, match="weights.pt is unreadable or corrupted"):
        tsrsa.load(path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_is_named_before_any_file_is_read(saved, tmp_path):
    model, path = saved
    before = model.predict()["yhat"].to_numpy()
    with pytest.raises(ValueError, match=r"device 'cuda' is not available here: torch.cuda.is_available\(\) is "
                                         r"False; load with device='cpu'"):
        tsrsa.load(path, device="cuda")
    with pytest.raises(ValueError, match="device 'cuda:1' is not available here"):
        tsrsa.load(tmp_path / "nowhere", device="cuda:1")  # the device first: no file is looked at
    assert np.array_equal(model.predict()["yhat"].to_numpy(), before)


def test_a_device_that_torch_does_not_know_is_named(saved):
    with pytest.raises(ValueError, match=r"device='gpu0' names no torch device .*use 'cpu', 'cuda', 'cuda:N' or "
                                         r"'mps'"):
        tsrsa.load(saved[1], device="gpu0")
    with pytest.raises(ValueError, match=r"device 'meta': a model loads on 'cpu', 'cuda', 'cuda:N' or 'mps'"):
        tsrsa.load(saved[1], device="meta")
    assert next(tsrsa.load(saved[1], device=torch.device("cpu")).network_.parameters()).device.type == "cpu"


def test_ids_timestamps_and_dtypes_survive(tmp_path):
    df = make_panel(n_series=2, length=30)
    df = df.assign(unique_id=df["unique_id"].map({"s0": 10, "s1": 20}),
                   ds=df["ds"].dt.tz_localize("Asia/Tokyo").dt.as_unit("s"))
    model = SeasonalNaiveForecaster(h=4, season_length=5).fit(df)
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())
    assert loaded.predict()["ds"].dtype == model.predict()["ds"].dtype
    cats = make_panel(n_series=2, length=30).astype({"unique_id": "category"})
    integer = cats.assign(ds=cats.groupby("unique_id", observed=True).cumcount() * 3)
    model = SeasonalNaiveForecaster(h=4, season_length=5, freq=3).fit(integer)
    model.save(tmp_path / "c")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "c").predict(), model.predict())


@pytest.mark.gpu
def test_gpu_model_loads_on_cpu(tmp_path):
    model = LSTMForecaster(h=3, input_size=8, hidden_size=4, max_epochs=1, trainer={"accelerator": "gpu"},
                           random_state=0)
    model.fit(make_panel(n_series=2, length=30))
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert next(loaded.network_.parameters()).device.type == "cpu"
    np.testing.assert_allclose(loaded.predict()["yhat"], model.predict()["yhat"], rtol=1e-4)


def test_a_learned_cycle_whose_option_was_edited_away_is_refused(tmp_path, small_budget):
    """A saved network with a learned cycle, its parameters forged to ask for none: named, not loaded."""
    frame = make_panel(n_series=2, length=80)
    model = tsrsa.DLinearForecaster(h=3, input_size=12, covariates={"cycle": 6}).fit(frame)
    path = tmp_path / "m"
    model.save(path)
    _edit_json(path / "config.json", params__covariates=None)
    _forge(path)
    with pytest.raises(ValueError, match="ask for no learned cycle, but the network saved in state.json and "
                                         "weights.pt carries one of 6 steps"):
        tsrsa.load(path)
