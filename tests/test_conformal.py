"""Conformal prediction intervals (tsrsa.estimator.conformal): the per-step quantile against numpy,
coverage on simulated noise, the columns, saving, update's refresh and every refusal."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa import DLinearForecaster, SeasonalNaiveForecaster
from tsrsa.estimator.conformal import RESIDUALS_ARRAY, SCALE_ARRAY, residuals_needed

from conftest import make_panel, run_cli

H, M, K = 4, 6, 10  # horizon, season, calibration windows


def naive(**kw):
    return SeasonalNaiveForecaster(h=H, season_length=M, **kw)


@pytest.fixture(scope="module")
def train():
    return make_panel(n_series=4, length=80)


@pytest.fixture(scope="module")
def fitted(train):
    return naive(conformal_windows=K).fit(train)


def series_of(df: pd.DataFrame) -> list[np.ndarray]:
    return [g["y"].to_numpy() for _, g in df.groupby("unique_id", sort=False)]


def iqr(y: np.ndarray) -> float:
    return float(np.percentile(y, 75) - np.percentile(y, 25))


def naive_forecast(history: np.ndarray) -> np.ndarray:
    """The seasonal naive forecast of the H steps after ``history``, by hand."""
    return history[-M:][np.arange(H) % M]


def conformal_quantile(residuals: np.ndarray, level: float) -> np.ndarray:
    """(h,) the ceil((n + 1) * level / 100)-th smallest residual of each step."""
    n = len(residuals)
    return np.sort(residuals, axis=0)[math.ceil((n + 1) * level / 100) - 1]


# ---------------------------------------------------------------------- the formula
def test_per_step_quantile_matches_an_independent_numpy_computation(train, fitted):
    series = series_of(train)
    scale = np.array([iqr(y) for y in series])  # a naive model has no statistics: the robust scale
    rows = []
    for w in range(K):  # window-major, as stored
        for y in series:
            cut = len(y) - 1 - (K - w) * H  # the last value the window's forecast sees
            rows.append(np.abs(y[cut + 1: cut + 1 + H] - naive_forecast(y[: cut + 1])))
    residuals = np.array(rows) / np.tile(scale, K)[:, None]  # (K * S, H)
    np.testing.assert_allclose(fitted.conformal_.residuals, residuals, rtol=1e-12)
    np.testing.assert_allclose(fitted.conformal_.scale, scale, rtol=1e-12)

    out = fitted.predict(level=[97.5, 80])
    assert list(out.columns) == ["unique_id", "ds", "yhat", "yhat_lo_80", "yhat_hi_80", "yhat_lo_97.5",
                                 "yhat_hi_97.5"]
    for level in (80, 97.5):
        half = scale[:, None] * conformal_quantile(residuals, level)[None, :]  # (S, H)
        yhat = np.array([naive_forecast(y) for y in series])
        name = f"{level:g}"
        np.testing.assert_allclose(out[f"yhat_lo_{name}"].to_numpy(), (yhat - half).ravel(), rtol=1e-12)
        np.testing.assert_allclose(out[f"yhat_hi_{name}"].to_numpy(), (yhat + half).ravel(), rtol=1e-12)


def test_the_needed_residuals_are_the_fewest_for_which_the_rank_exists():
    for level in (50, 80, 90, 95, 97.5, 99, 33.3):
        need = residuals_needed(level)
        assert math.ceil((need + 1) * level / 100) <= need
        assert need == 1 or math.ceil(need * level / 100) > need - 1
    assert [residuals_needed(a) for a in (80, 95, 99)] == [4, 19, 99]


def test_columns_ordered_and_bounds_nested(fitted, train):
    out = fitted.predict(level=[95, 50, 80])
    assert list(out.columns)[2:] == ["yhat", "yhat_lo_50", "yhat_hi_50", "yhat_lo_80", "yhat_hi_80",
                                     "yhat_lo_95", "yhat_hi_95"]
    lo = out[["yhat_lo_95", "yhat_lo_80", "yhat_lo_50", "yhat"]].to_numpy()
    hi = out[["yhat", "yhat_hi_50", "yhat_hi_80", "yhat_hi_95"]].to_numpy()
    assert (np.diff(lo, axis=1) >= 0).all() and (np.diff(hi, axis=1) >= 0).all()
    pd.testing.assert_frame_equal(fitted.predict(), out[["unique_id", "ds", "yhat"]])
    pd.testing.assert_frame_equal(fitted.predict(df=train, level=[80]), fitted.predict(level=[80]))
    short = fitted.predict(h=2, level=[80])
    pd.testing.assert_frame_equal(short, fitted.predict(level=[80]).groupby("unique_id").head(2).reset_index(drop=True))


def test_a_new_series_at_predict_takes_its_own_scale(fitted, train):
    other = make_panel(n_series=1, length=50, ids=["fresh"], seed=3)
    other["y"] *= 7.0
    out = fitted.predict(df=other, level=[80])
    y = other["y"].to_numpy()
    quantile = conformal_quantile(fitted.conformal_.residuals, 80)
    np.testing.assert_allclose(out["yhat_hi_80"] - out["yhat"], iqr(y) * quantile, rtol=1e-12)


def test_a_network_is_calibrated_on_the_errors_of_cross_validation(train):
    model = DLinearForecaster(h=H, input_size=8, max_epochs=2, batch_size=16, random_state=0)
    fitted = model.clone().set_params(conformal_windows=3).fit(train)
    cv = model.cross_validate(train, n_windows=3)  # the same held-out fit, scored on the same windows
    errors = np.abs(cv["y"] - cv["yhat"]).to_numpy().reshape(4, 3, H).transpose(1, 0, 2)  # (K, S, H)
    scale = fitted.memory_.scale  # a network with a scaler: its own statistics
    np.testing.assert_allclose(fitted.conformal_.scale, scale)
    np.testing.assert_allclose(fitted.conformal_.residuals, (errors / scale[None, :, None]).reshape(-1, H),
                               rtol=1e-5, atol=1e-7)
    out = fitted.predict(level=[50, 75])
    assert (out["yhat_lo_75"] <= out["yhat_lo_50"]).all() and (out["yhat_lo_50"] <= out["yhat"]).all()
    assert (out["yhat"] <= out["yhat_hi_50"]).all() and (out["yhat_hi_50"] <= out["yhat_hi_75"]).all()
    pd.testing.assert_frame_equal(out[["unique_id", "ds", "yhat"]], model.fit(train).predict())  # same final fit


# ---------------------------------------------------------------------- coverage
def test_coverage_on_iid_noise_is_nominal():
    """100 series of i.i.d. noise, scales from 0.1 to 100. Cross-validation calibrates on 20 windows
    per series (2,000 residuals per step) and scores the next 20 (8,000 values). The coverage of a
    fixed calibration set has standard deviation about sqrt(a(1 - a)(1/2000 + 1/8000)): 0.010 at 80%,
    0.0055 at 95%; 3.5 of them is the tolerance (the seed is fixed: this is one draw)."""
    rng = np.random.default_rng(12345)
    S, windows, length = 100, 20, 1 + 20 * H + 20 * H
    sigma = 10 ** rng.uniform(-1, 2, S)
    y = rng.uniform(-50, 50, S)[:, None] + sigma[:, None] * rng.standard_normal((S, length))  # (S, length)
    frame = pd.DataFrame({"unique_id": np.repeat(np.arange(S), length), "ds": np.tile(np.arange(length), S),
                          "y": y.ravel()})
    model = SeasonalNaiveForecaster(h=H, season_length=1, conformal_windows=windows, freq=1)
    cv = model.cross_validate(frame, n_windows=windows, level=[80, 95])
    small = cv["unique_id"].isin(np.argsort(sigma)[: S // 3])
    large = cv["unique_id"].isin(np.argsort(sigma)[-(S // 3):])
    for level in (80, 95):
        a = level / 100
        inside = (cv[f"yhat_lo_{level}"] <= cv["y"]) & (cv["y"] <= cv[f"yhat_hi_{level}"])
        sd = math.sqrt(a * (1 - a) * (1 / (S * windows) + 1 / len(cv)))
        assert abs(inside.mean() - a) < 3.5 * sd, (level, inside.mean())
        # one panel-wide quantile serves series of every size: the smallest and largest thirds alike
        assert abs(inside[small].mean() - a) < 3.5 * sd * math.sqrt(3) + 0.01, (level, inside[small].mean())
        assert abs(inside[large].mean() - a) < 3.5 * sd * math.sqrt(3) + 0.01, (level, inside[large].mean())


def test_cross_validate_without_level_skips_the_calibration(train):
    plain = naive().cross_validate(train, n_windows=2)
    pd.testing.assert_frame_equal(naive(conformal_windows=K).cross_validate(train, n_windows=2), plain)
    with_level = naive(conformal_windows=3).cross_validate(train, n_windows=2, level=[50])
    pd.testing.assert_frame_equal(with_level[plain.columns], plain)
    assert list(with_level.columns[-2:]) == ["yhat_lo_50", "yhat_hi_50"]


# ---------------------------------------------------------------------- saving
def test_save_load_keeps_the_calibration_and_old_models_load_without(fitted, tmp_path):
    fitted.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.conformal_.residuals, fitted.conformal_.residuals)
    np.testing.assert_array_equal(loaded.conformal_.scale, fitted.conformal_.scale)
    pd.testing.assert_frame_equal(loaded.predict(level=[80, 95]), fitted.predict(level=[80, 95]))
    naive().fit(make_panel()).save(tmp_path / "plain")
    with np.load(tmp_path / "plain" / "arrays.npz") as arrays:
        assert RESIDUALS_ARRAY not in arrays.files
    fixture = tsrsa.load(Path(__file__).resolve().parent / "fixtures" / "format_v4" / "naive")
    assert fixture.conformal_ is None and fixture.conformal_windows is None
    with pytest.raises(ValueError, match="conformal_windows=k"):
        fixture.predict(level=[80])


def test_a_calibration_that_does_not_fit_the_model_is_refused(fitted, tmp_path):
    from tsrsa.estimator.saved_checks import check_consistent

    state, arrays, _ = fitted.fitted_files()
    check_consistent(tmp_path, fitted, state, arrays)
    for name, value, match in [(SCALE_ARRAY, np.ones(2), "one scale for each of the 4 series"),
                               (RESIDUALS_ARRAY, np.ones((3, H + 1)), "not \\(windows, h=4\\)"),
                               (RESIDUALS_ARRAY, -np.ones((3, H)), "negative or non-finite"),
                               (SCALE_ARRAY, None, "is missing")]:
        edited = {**arrays, name: value} if value is not None else {k: v for k, v in arrays.items() if k != name}
        with pytest.raises(ValueError, match=f"arrays.npz holds a conformal calibration .*{match}"):
            check_consistent(tmp_path, fitted, state, edited)


# ---------------------------------------------------------------------- update
def test_update_scores_each_whole_new_window_and_keeps_the_size(train, fitted):
    model = naive(conformal_windows=K).fit(train)
    later = make_panel(n_series=4, length=91).groupby("unique_id").tail(11)  # 2 whole windows, 3 steps left
    later = later[later["unique_id"] != "s3"]  # s3 brings nothing: no residual of it
    before = model.conformal_.residuals.copy()
    first = model.predict()  # what the model said before the update
    second = naive().fit(pd.concat([train, later.groupby("unique_id").head(H)])).predict()  # after H new steps
    model.update(later)
    new = []
    for forecast, w in ((first, 0), (second, 1)):
        for i, sid in enumerate(["s0", "s1", "s2"]):
            actual = later.loc[later["unique_id"] == sid, "y"].to_numpy()[w * H: (w + 1) * H]
            yhat = forecast.loc[forecast["unique_id"] == sid, "yhat"].to_numpy()
            new.append(np.abs(actual - yhat) / fitted.conformal_.scale[i])
    after = model.conformal_.residuals
    assert after.shape == before.shape  # the table keeps its size: the oldest rows drop out
    np.testing.assert_allclose(after[-6:], np.array(new), rtol=1e-12)
    np.testing.assert_array_equal(after[:-6], before[6:])
    np.testing.assert_array_equal(model.conformal_.scale, fitted.conformal_.scale)


def test_update_with_a_new_series_gives_it_its_own_scale(train):
    model = naive(conformal_windows=K).fit(train)
    fresh = make_panel(n_series=1, length=30, ids=["new"], seed=5)
    model.update(fresh, new_ids="add")
    assert len(model.conformal_.scale) == 5
    assert model.conformal_.scale[-1] == pytest.approx(iqr(fresh["y"].to_numpy()))
    assert len(model.predict(level=[80])) == 5 * H


def test_a_refused_update_changes_nothing(train):
    model = naive(conformal_windows=K).fit(train)
    calibration = model.conformal_
    gap = make_panel(n_series=4, length=95).groupby("unique_id").tail(5)
    with pytest.raises(ValueError):
        model.update(gap)
    assert model.conformal_ is calibration


SMALL = dict(input_size=8, max_epochs=1, batch_size=16, random_state=0, conformal_windows=2)


@pytest.mark.parametrize("make", [
    lambda: tsrsa.LSTMForecaster(h=H, hidden_size=8, n_layers=1, **SMALL),
    lambda: tsrsa.RSAForecaster(h=H, patch_len=2, d_model=8, n_heads=4, n_layers=1, d_ff=16, **SMALL),
    lambda: tsrsa.TransformerForecaster(h=H, patch_len=4, d_model=8, n_heads=2, n_layers=1, d_ff=16, stream=True,
                                        **SMALL),
], ids=["LSTM", "RSA", "TransformerStream"])
def test_every_kind_of_state_calibrates_predicts_and_refreshes(make):
    train = make_panel(length=40)
    model = make().fit(train)
    assert model.conformal_.residuals.shape == (2 * 3, H)
    out = model.predict(level=[50])
    assert ((out["yhat_lo_50"] <= out["yhat"]) & (out["yhat"] <= out["yhat_hi_50"])).all()
    before = model.conformal_.residuals.copy()
    yhat = model.predict()["yhat"].to_numpy().reshape(3, H)
    later = make_panel(length=44).groupby("unique_id").tail(H)
    model.update(later)
    expected = np.abs(later["y"].to_numpy().reshape(3, H) - yhat) / model.conformal_.scale[:, None]
    np.testing.assert_allclose(model.conformal_.residuals, np.concatenate([before[3:], expected]), rtol=1e-6)


def test_update_reads_future_covariates_from_the_new_rows_and_needs_every_series():
    full = make_panel(length=60)
    full["x"] = np.sin(np.arange(len(full)))
    train, later = full.groupby("unique_id").head(48), full.groupby("unique_id").tail(12)

    def fit():
        return DLinearForecaster(h=H, input_size=8, max_epochs=1, random_state=0, covariates={"future": ["x"]},
                                 conformal_windows=3).fit(train)

    model = fit()
    yhat = model.predict(future_df=later.groupby("unique_id").head(H))["yhat"].to_numpy().reshape(3, H)
    model.update(later)  # 3 whole windows of every series: 9 new rows, the first scored against yhat
    first = np.abs(later.groupby("unique_id").head(H)["y"].to_numpy().reshape(3, H) - yhat)
    np.testing.assert_allclose(model.conformal_.residuals[:3], first / model.conformal_.scale[:, None], rtol=1e-6)
    partial = fit()
    before = partial.conformal_.residuals.copy()
    partial.update(later[later["unique_id"] != "s2"])  # s2's covariates are missing: nothing is scored
    np.testing.assert_array_equal(partial.conformal_.residuals, before)


def test_the_command_line_writes_the_interval_columns(capsys, tmp_path):
    make_panel(length=60).to_csv(tmp_path / "train.csv", index=False)
    assert run_cli(capsys, "fit", "--model", "SeasonalNaive", "--h", H, "--input", tmp_path / "train.csv", "--output",
                   tmp_path / "m", "-p", "conformal_windows=5", "-p", f"season_length={M}", "--quiet")[0] == 0
    status, out, _ = run_cli(capsys, "predict", "--model-dir", tmp_path / "m", "--level", "80", "90")
    assert status == 0
    assert out.splitlines()[0] == "unique_id,ds,yhat,yhat_lo_80,yhat_hi_80,yhat_lo_90,yhat_hi_90"


# ---------------------------------------------------------------------- refusals
@pytest.mark.parametrize("level,error,match", [
    (80, TypeError, "level must be a list"),
    ("80", TypeError, "level must be a list"),
    (["80"], TypeError, "must hold numbers"),
    ([True], TypeError, "must hold numbers"),
    ([None], TypeError, "must hold numbers"),
    ([0], ValueError, "outside \\(0, 100\\)"),
    ([100], ValueError, "outside \\(0, 100\\)"),
    ([-5, 80], ValueError, "outside \\(0, 100\\)"),
    ([float("nan")], ValueError, "outside \\(0, 100\\)"),
    ([80, 80.0], ValueError, "lists 80.0 twice"),
    ([], ValueError, "level is empty"),
    (np.array([[80]]), TypeError, "level must be a list"),
])
def test_bad_levels_are_refused(fitted, train, level, error, match):
    with pytest.raises(error, match=match):
        fitted.predict(level=level)
    with pytest.raises(error, match=match):
        fitted.cross_validate(train, n_windows=1, level=level)


def test_a_level_without_calibration_is_refused(train):
    model = naive().fit(train)
    with pytest.raises(ValueError, match="has none: fit with conformal_windows=k"):
        model.predict(level=[80])
    with pytest.raises(ValueError, match="conformal_windows=None: set conformal_windows=k"):
        naive().cross_validate(train, level=[80])


def test_too_few_windows_for_a_level_are_refused_naming_how_many(fitted, train):
    with pytest.raises(ValueError, match="level=99 needs at least 99 calibration windows.*holds 40 for 4 series: "
                                         "refit with conformal_windows=25"):
        fitted.predict(level=[80, 99])
    with pytest.raises(ValueError, match="level=95 needs at least 19 calibration windows.*conformal_windows=5"):
        naive(conformal_windows=2).cross_validate(train, n_windows=1, level=[95])


@pytest.mark.parametrize("value,error", [(0, ValueError), (-1, ValueError), (2.5, TypeError), ("3", TypeError),
                                         (True, TypeError)])
def test_bad_conformal_windows_are_refused(train, value, error):
    with pytest.raises(error, match="conformal_windows"):
        naive(conformal_windows=value).fit(train)


def test_series_too_short_for_the_windows_are_refused_and_a_fitted_model_kept(train, fitted):
    model = naive(conformal_windows=K).fit(train)
    calibration, forecast = model.conformal_, model.predict(level=[80])
    short = make_panel(n_series=4, length=30)
    with pytest.raises(ValueError, match="needs at least 46 .*conformal_windows=10 held-out horizons of h=4"):
        model.fit(short)
    assert model.conformal_ is calibration
    pd.testing.assert_frame_equal(model.predict(level=[80]), forecast)
    with pytest.raises(ValueError, match="conformal_windows \\* h = 40"):
        model.cross_validate(make_panel(n_series=4, length=50), n_windows=2, level=[80])


def test_nothing_the_user_passes_is_mutated(fitted, train):
    level, frame = [95, 80], train.copy(deep=True)
    fitted.predict(df=frame, level=level)
    fitted.cross_validate(frame, n_windows=1, level=level)
    assert level == [95, 80]
    pd.testing.assert_frame_equal(frame, train)
