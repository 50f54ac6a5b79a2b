"""Saving and loading: files written, format fixtures, tampering, the class whitelist."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import LSTMForecaster, SeasonalNaiveForecaster
from tsrsa.forecasters.persistence import FORMAT_VERSION

from conftest import make_panel

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = LSTMForecaster(h=3, input_size=6, hidden_size=4, n_layers=1, max_epochs=1, random_state=0)
    model.fit(make_panel(n_series=2, length=30))
    path = tmp_path_factory.mktemp("saved") / "model"
    model.save(path)
    return model, path


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_directory_layout_and_config(saved):
    model, path = saved
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "config.json", "state.json", "weights.pt"]
    config = json.loads((path / "config.json").read_text())
    assert config["format_version"] == FORMAT_VERSION
    assert config["class"] == "LSTMForecaster"
    assert config["params"]["hidden_size"] == 4
    assert {"tsrsa", "torch", "numpy", "pandas", "python"} <= set(config["versions"])
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
    got = model.predict()
    assert list(got.columns) == list(expected.columns)
    np.testing.assert_allclose(got.drop(columns=["unique_id", "ds"]).to_numpy(),
                               expected.drop(columns=["unique_id", "ds"]).to_numpy(), rtol=1e-5)
    assert (got["ds"].to_numpy() == expected["ds"].to_numpy()).all()


@pytest.mark.parametrize("target,damage", [
    ("weights.pt", lambda b: b[:-10] + bytes(10)),
    ("arrays.npz", lambda b: b[:100]),
    ("state.json", lambda b: b.replace(b'"h"', b'"D"')),
])
def test_modified_files_are_refused_by_name(saved, tmp_path, target, damage):
    path = _copy(saved[1], tmp_path / "m")
    (path / target).write_bytes(damage((path / target).read_bytes()))
    with pytest.raises(ValueError, match=f"{target} does not match the checksum"):
        tsrsa.load(path)


def test_unreadable_or_foreign_configs(saved, tmp_path):
    path = _copy(saved[1], tmp_path / "m")
    config = json.loads((path / "config.json").read_text())

    def write(**changes):
        (path / "config.json").write_text(json.dumps({**config, **changes}))

    write(**{"class": "os.system"})
    with pytest.raises(ValueError, match="class 'os.system', which is not a tsrsa forecaster"):
        tsrsa.load(path)
    write(format_version=FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match="newer tsrsa"):
        tsrsa.load(path)
    write(files={**config["files"], "../../etc/passwd": "x"})
    with pytest.raises(ValueError, match="unexpected file"):
        tsrsa.load(path)
    write(params={**config["params"], "bogus": 1})
    with pytest.raises(ValueError, match="parameters that LSTMForecaster does not take"):
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
    import hashlib

    path = _copy(saved[1], tmp_path / "m")
    torch.save({"lstm.weight": object}, path / "weights.pt")
    config = json.loads((path / "config.json").read_text())
    config["files"]["weights.pt"] = hashlib.sha256((path / "weights.pt").read_bytes()).hexdigest()
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="weights.pt is unreadable or corrupted"):
        tsrsa.load(path)


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
    model = LSTMForecaster(h=3, input_size=6, hidden_size=4, max_epochs=1, accelerator="gpu", random_state=0)
    model.fit(make_panel(n_series=2, length=30))
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert next(loaded.network_.parameters()).device.type == "cpu"
    np.testing.assert_allclose(loaded.predict()["yhat"], model.predict()["yhat"], rtol=1e-4)
