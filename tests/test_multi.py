"""MultiForecaster: several forecasters on one frame, each column equal to that model fitted alone."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa import DLinearForecaster, ETSForecaster, MultiForecaster, SeasonalNaiveForecaster

H = 4


def monthly(n_series: int = 3, length: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({
        "unique_id": f"s{k}", "ds": pd.date_range("2020-01-01", periods=length, freq="MS"),
        "y": 10 + k + np.sin(2 * np.pi * t / 12) + 0.05 * k * t + rng.normal(0, 0.2, length)})
        for k in range(n_series)], ignore_index=True)


def statistical_models():
    return [SeasonalNaiveForecaster(h=H, conformal_windows=3), ETSForecaster(h=H, trend=None, seasonal=None,
                                                                              conformal_windows=3)]


def test_each_column_equals_the_model_fitted_alone():
    df = monthly()
    models = statistical_models()
    before = [m.get_params() for m in models]
    multi = MultiForecaster(models).fit(df)
    out = multi.predict(level=[80])
    assert list(out.columns) == ["unique_id", "ds", "SeasonalNaive", "SeasonalNaive_lo_80", "SeasonalNaive_hi_80",
                                 "ETS", "ETS_lo_80", "ETS_hi_80"]
    for name, model in zip(["SeasonalNaive", "ETS"], models):
        alone = model.clone().fit(df).predict(level=[80])
        assert out[["unique_id", "ds"]].equals(alone[["unique_id", "ds"]])
        for suffix in ("", "_lo_80", "_hi_80"):
            np.testing.assert_array_equal(out[name + suffix].to_numpy(), alone["yhat" + suffix].to_numpy())
    # the models passed in are neither fitted nor changed
    assert [m.get_params() for m in models] == before
    assert not any(hasattr(m, "memory_") for m in models)


def test_predict_from_new_history_and_update_equal_each_model():
    df = monthly()
    multi = MultiForecaster(statistical_models()).fit(df)
    tail = df.groupby("unique_id").tail(30)
    new = pd.DataFrame({"unique_id": "s0", "ds": pd.date_range("2023-05-01", periods=3, freq="MS"),
                        "y": [10.0, 11.0, 12.0]})
    from_df = multi.predict(df=tail)
    updated = multi.update(new).predict()
    for name, model in zip(["SeasonalNaive", "ETS"], statistical_models()):
        alone = model.fit(df)
        np.testing.assert_array_equal(from_df[name].to_numpy(), alone.predict(df=tail)["yhat"].to_numpy())
        np.testing.assert_array_equal(updated[name].to_numpy(), alone.update(new).predict()["yhat"].to_numpy())


def test_update_is_all_or_nothing():
    df = monthly()
    multi = MultiForecaster(statistical_models()).fit(df)
    before = multi.predict()
    bad = pd.DataFrame({"unique_id": "s0", "ds": pd.date_range("2030-01-01", periods=3, freq="MS"),
                        "y": [1.0, 2.0, 3.0]})  # does not continue s0
    with pytest.raises(ValueError, match="model 'SeasonalNaive'"):
        multi.update(bad)
    pd.testing.assert_frame_equal(multi.predict(), before)


def test_neural_column_equals_the_network_fitted_alone(small_budget):
    df = monthly(n_series=2, length=36)
    net = DLinearForecaster(h=H, input_size=8, random_state=0)
    multi = MultiForecaster({"linear": net, "naive": SeasonalNaiveForecaster(h=H)}).fit(df)
    out = multi.predict()
    assert list(out.columns) == ["unique_id", "ds", "linear", "naive"]
    np.testing.assert_array_equal(out["linear"].to_numpy(), net.clone().fit(df).predict()["yhat"].to_numpy())


def test_cross_validate_has_each_models_own_windows():
    df = monthly()
    models = statistical_models()
    cv = MultiForecaster(models).cross_validate(df, n_windows=2, step_size=2)
    assert list(cv.columns) == ["unique_id", "ds", "cutoff", "step", "y", "SeasonalNaive", "ETS"]
    for name, model in zip(["SeasonalNaive", "ETS"], models):
        own = model.cross_validate(df, n_windows=2, step_size=2)
        pd.testing.assert_frame_equal(cv[["unique_id", "ds", "cutoff", "step", "y"]], own.drop(columns="yhat"))
        np.testing.assert_array_equal(cv[name].to_numpy(), own["yhat"].to_numpy())


def test_names_and_mismatches_are_clear_errors():
    df = monthly()
    with pytest.raises(ValueError, match="more than one model is named 'SeasonalNaive'"):
        MultiForecaster([SeasonalNaiveForecaster(h=H), SeasonalNaiveForecaster(h=H, season_length=1)]).fit(df)
    named = MultiForecaster([("m12", SeasonalNaiveForecaster(h=H)),
                             ("m1", SeasonalNaiveForecaster(h=H, season_length=1))]).fit(df)
    assert list(named.predict().columns) == ["unique_id", "ds", "m12", "m1"]
    with pytest.raises(ValueError, match="h=6"):
        MultiForecaster([SeasonalNaiveForecaster(h=H), ETSForecaster(h=6)]).fit(df)
    with pytest.raises(ValueError, match="time_col"):
        MultiForecaster([SeasonalNaiveForecaster(h=H), ETSForecaster(h=H, time_col="date")]).fit(df)
    with pytest.raises(TypeError, match="not a tsrsa forecaster"):
        MultiForecaster([SeasonalNaiveForecaster(h=H), "ETS"]).fit(df)
    with pytest.raises(ValueError, match="empty"):
        MultiForecaster([]).fit(df)
    with pytest.raises(TypeError, match="set of models"):
        MultiForecaster([MultiForecaster([SeasonalNaiveForecaster(h=H)])]).fit(df)


def test_fit_failure_names_the_model_and_changes_nothing():
    df = monthly()
    multi = MultiForecaster(statistical_models()).fit(df)
    before = multi.predict()
    short = df.groupby("unique_id").head(5)
    with pytest.raises(ValueError, match="model 'SeasonalNaive'|model 'ETS'"):
        multi.fit(short)
    pd.testing.assert_frame_equal(multi.predict(), before)


def test_save_load_round_trip_and_refusals(tmp_path):
    df = monthly()
    multi = MultiForecaster(statistical_models()).fit(df)
    path = tmp_path / "set"
    multi.save(path)
    loaded = tsrsa.load(path)
    assert isinstance(loaded, MultiForecaster)
    pd.testing.assert_frame_equal(loaded.predict(level=[80]), multi.predict(level=[80]))
    multi.save(path, overwrite=True)  # a saved set is replaced whole
    with pytest.raises(ValueError, match="already holds"):
        multi.save(path)
    # an edited manifest is refused
    config = json.loads((path / "config.json").read_text())
    config["members"][0]["name"] = "Other"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="config.json does not match the checksum"):
        tsrsa.load(path)


def test_load_refuses_an_edited_member(tmp_path):
    multi = MultiForecaster(statistical_models()).fit(monthly())
    path = tmp_path / "set"
    multi.save(path)
    member = path / "members" / "1" / "config.json"
    member.write_text(member.read_text().replace('"h": 4', '"h": 5'))
    with pytest.raises(ValueError, match="members/1/config.json"):
        tsrsa.load(path)


def test_load_refuses_a_foreign_member_folder(tmp_path):
    multi = MultiForecaster(statistical_models()).fit(monthly())
    path = tmp_path / "set"
    multi.save(path)
    (path / "members" / "7").mkdir()
    with pytest.raises(ValueError, match="not part of the set"):
        tsrsa.load(path)


def test_plot_draws_every_model():
    pytest.importorskip("matplotlib")
    multi = MultiForecaster(statistical_models()).fit(monthly())
    fig = multi.plot(max_series=2)
    assert len(fig.axes) == 2
    labels = {line.get_label() for line in fig.axes[0].lines}
    assert {"SeasonalNaive", "ETS", "history"} <= labels


def test_clone_and_params():
    from sklearn.base import clone

    multi = MultiForecaster(statistical_models())
    copy = clone(multi)
    assert [type(m) for m in copy.models] == [type(m) for m in multi.models]
    assert copy.models[0] is not multi.models[0]
    assert multi.h == H and multi.id_col == "unique_id"
