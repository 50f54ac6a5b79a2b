"""tsrsa forecasters as sktime forecasters (tsrsa.integrations.sktime): sktime's own check_estimator,
and the adapter against tsrsa's own predictions, intervals, updates and panel frames.

``make test`` runs a named, fast subset of sktime's ``check_estimator`` (fit/predict, the horizon, the
update, intervals and quantiles, clone and parameters, hierarchical data with X). The whole suite
(a few minutes) runs with::

    TSRSA_SKTIME_CHECKS=all make test PYTEST_ARGS=tests/test_sktime.py

Skipped when sktime is not installed (``pip install 'tsrsa[sktime]'``).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("sktime")

from sktime.forecasting.base import ForecastingHorizon  # noqa: E402

from tsrsa import DLinearForecaster, SeasonalNaiveForecaster  # noqa: E402
from tsrsa.integrations.sktime import TsrsaForecaster  # noqa: E402

#: sktime's checks that ``make test`` runs whole (each on both instances of get_test_params) ...
FAST_CHECKS = [
    "test_create_test_instance", "test_constructor", "test_clone", "test_get_params", "test_set_params",
    "test_fit_predict", "test_predict_quantiles", "test_update_predict_single", "test_cutoff",
    "test_different_fh_in_fit_and_predict_error_handling", "test_update_with_exogenous_variables",
    "test_hierarchical_with_exogenous", "test_persistence_via_pickle",
]
#: ... and the cases it runs of the long ones (instance 1 is the DLinear with X, intervals, quantiles)
FAST_CASES = [
    "test_predict_time_index[TsrsaForecaster-1-y:2cols-fh=[2 5]-period-period-False]",
    "test_predict_time_index[TsrsaForecaster-0-y:1cols-fh=[2 5]-datetime-datetime-False]",
    "test_predict_time_index[TsrsaForecaster-1-y:1cols-fh=[-3  2]-datetime-datetime-False]",
    "test_predict_time_index_with_X[TsrsaForecaster-1-y:2cols-fh=1-period-period-False]",
    "test_predict_time_index_with_X[TsrsaForecaster-1-y:1cols-fh=1-int-int-False]",
    "test_predict_interval[TsrsaForecaster-1-y:2cols-fh=[2 5]-alpha=[0.25, 0.75]-1]",
    "test_predict_interval[TsrsaForecaster-0-y:1cols-fh=1-alpha=0.05-0]",
    "test_update_predict_predicted_index[TsrsaForecaster-1-y:1cols-update_params=False-step=5-1-fh=[2 5]]",
    "test_update_predict_predicted_index[TsrsaForecaster-0-y:2cols-update_params=True-1-fh=[2 5]]",
]


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def failures(results: dict) -> dict:
    return {name: result for name, result in results.items() if result != "PASSED"}


def test_sktime_check_estimator_named_checks():
    from sktime.utils.estimator_checks import check_estimator

    if os.environ.get("TSRSA_SKTIME_CHECKS") == "all":
        runs = [{}]
    else:  # two runs: check_estimator skips a named test's other cases when cases are named too
        runs = [{"tests_to_run": FAST_CHECKS}, {"fixtures_to_run": FAST_CASES}]
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for named in runs:
            results.update(check_estimator(TsrsaForecaster, raise_exceptions=False, verbose=False, **named))
    assert results and not failures(results), failures(results)
    if len(runs) > 1:  # every named check and case ran
        assert {name.split("[")[0] for name in results} >= set(FAST_CHECKS)
        assert set(FAST_CASES) <= set(results)


# ---------------------------------------------------------------------- data
def panel(n_instances: int = 2, length: int = 60, freq: str = "D", columns=("y",), seed: int = 0) -> pd.DataFrame:
    """A panel in sktime's form: rows (instance, time), one column per variable."""
    rng = np.random.default_rng(seed)
    times = pd.date_range("2024-01-01", periods=length, freq=freq)
    index = pd.MultiIndex.from_product([[f"i{k}" for k in range(n_instances)], times], names=["shop", "day"])
    t = np.tile(np.arange(length), n_instances)
    values = {c: 10 + j + np.sin(2 * np.pi * t / 7) + 0.1 * rng.standard_normal(len(t)) for j, c in enumerate(columns)}
    return pd.DataFrame(values, index=index)


def long(y: pd.DataFrame, column: str = "y") -> pd.DataFrame:
    """The same panel as tsrsa's long frame."""
    frame = y[column].rename("y").reset_index()
    return frame.rename(columns={frame.columns[0]: "unique_id", frame.columns[1]: "ds"})


def dlinear(**changes):
    return DLinearForecaster(**{**dict(h=3, input_size=8, max_epochs=2, random_state=0), **changes})


# ---------------------------------------------------------------------- the same numbers as tsrsa
def test_predictions_equal_tsrsas_own_for_the_same_model_and_data():
    y = panel()
    adapter = TsrsaForecaster(dlinear(h=99)).fit(y, fh=[1, 2, 3])
    own = dlinear(h=3).fit(long(y)).predict()
    got = adapter.predict()
    assert adapter.estimator_.h == 3  # h comes from fh, not from the wrapped estimator
    np.testing.assert_allclose(got["y"].to_numpy(), own["yhat"].to_numpy(), rtol=1e-6)
    assert list(got.index.get_level_values("day").unique()) == list(pd.date_range("2024-03-01", periods=3))
    assert got.index.names == ["shop", "day"]


def test_a_sparse_fh_trains_the_farthest_step_and_returns_its_steps():
    y = panel(n_instances=1).droplevel(0)
    adapter = TsrsaForecaster(dlinear()).fit(y, fh=[2, 5])
    own = dlinear(h=5).fit(y["y"]).predict()
    assert adapter.estimator_.h == 5
    got = adapter.predict()
    np.testing.assert_allclose(got["y"].to_numpy(), own["yhat"].to_numpy()[[1, 4]], rtol=1e-6)
    absolute = ForecastingHorizon(pd.DatetimeIndex(["2024-03-02", "2024-03-05"]), is_relative=False)
    again = TsrsaForecaster(dlinear()).fit(y, fh=absolute).predict()
    pd.testing.assert_frame_equal(again, got, check_freq=False)


def test_intervals_and_quantiles_equal_tsrsas_conformal_ones():
    y = panel(n_instances=3, length=40)
    model = SeasonalNaiveForecaster(h=2, season_length=7, conformal_windows=5)
    adapter = TsrsaForecaster(model).fit(y, fh=[1, 2])
    own = model.clone().fit(long(y)).predict(level=[80, 90])
    intervals = adapter.predict_interval(coverage=[0.8, 0.9])
    for coverage, level in ((0.8, 80), (0.9, 90)):
        np.testing.assert_allclose(intervals[("y", coverage, "lower")], own[f"yhat_lo_{level}"])
        np.testing.assert_allclose(intervals[("y", coverage, "upper")], own[f"yhat_hi_{level}"])
    quantiles = adapter.predict_quantiles(alpha=[0.05, 0.5, 0.95])
    np.testing.assert_allclose(quantiles[("y", 0.05)], own["yhat_lo_90"])
    np.testing.assert_allclose(quantiles[("y", 0.5)], own["yhat"])
    np.testing.assert_allclose(quantiles[("y", 0.95)], own["yhat_hi_90"])
    with pytest.raises(ValueError, match="calibration windows"):
        adapter.predict_interval(coverage=0.99)  # 15 residuals per step cannot give 99%


def test_quantiles_of_a_quantile_loss_are_the_trained_ones():
    y = panel(n_instances=1, length=50).droplevel(0)
    model = dlinear(loss="quantile", quantiles=[0.1, 0.25, 0.75, 0.9])
    adapter = TsrsaForecaster(model).fit(y, fh=[1, 2, 3])
    own = model.clone().set_params(h=3).fit(y["y"]).predict()
    quantiles = adapter.predict_quantiles(alpha=[0.1, 0.5, 0.9])
    np.testing.assert_allclose(quantiles[("y", 0.1)], own["yhat_q10"], rtol=1e-6)
    np.testing.assert_allclose(quantiles[("y", 0.9)], own["yhat_q90"], rtol=1e-6)
    interval = adapter.predict_interval(coverage=0.5)
    np.testing.assert_allclose(interval[("y", 0.5, "lower")], own["yhat_q25"], rtol=1e-6)
    with pytest.raises(ValueError, match="not trained for"):
        adapter.predict_interval(coverage=0.9)


# ---------------------------------------------------------------------- frames
def test_panel_round_trip_keeps_instances_variables_and_index_types():
    y = panel(n_instances=2, length=40, columns=("sales", "cost"))
    hierarchy = pd.concat({"north": y, "south": y + 1}, names=["region"])
    got = TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=7)).fit(hierarchy, fh=[1, 2]).predict()
    assert list(got.columns) == ["sales", "cost"] and got.index.names == ["region", "shop", "day"]
    assert got.index.droplevel(-1).unique().tolist() == hierarchy.index.droplevel(-1).unique().tolist()
    last_week = hierarchy.groupby(level=[0, 1]).nth([-7, -6])
    np.testing.assert_allclose(got.to_numpy(), last_week.to_numpy())
    periods = panel(n_instances=2, length=30, freq="MS")
    periods.index = periods.index.set_levels(periods.index.levels[1].to_period("M"), level=1)
    out = TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=12)).fit(periods, fh=[1]).predict()
    assert isinstance(out.index.levels[1], pd.PeriodIndex) and str(out.index[0][1]) == "2026-07"


def test_series_that_end_apart_forecast_from_their_own_ends():
    y = panel(n_instances=2, length=30)
    y = y[(y.index.get_level_values(0) == "i0") | (y.index.get_level_values(1) <= "2024-01-26")]
    got = TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=7)).fit(y, fh=[1]).predict()
    assert got.index.tolist() == [("i0", pd.Timestamp("2024-01-31")), ("i1", pd.Timestamp("2024-01-27"))]
    absolute = ForecastingHorizon(pd.DatetimeIndex(["2024-01-31"]), is_relative=False)
    model = TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=7)).fit(y, fh=absolute)
    assert model.estimator_.h == 5  # i1 ends five days before the target
    assert model.predict().index.get_level_values(1).unique().tolist() == [pd.Timestamp("2024-01-31")]


def test_integer_time_in_steps_of_k_is_read_with_freq_k():
    y = pd.Series(np.sin(np.arange(30.0)), index=pd.Index(np.arange(0, 60, 2)))
    got = TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=3)).fit(y, fh=[1, 2]).predict()
    assert got.index.tolist() == [60, 62]
    np.testing.assert_allclose(got.to_numpy(), y.to_numpy()[[-3, -2]])


def test_in_sample_steps_are_tsrsas_one_step_fitted_values():
    y = panel(n_instances=2, length=30)
    model = SeasonalNaiveForecaster(h=1, season_length=7)
    adapter = TsrsaForecaster(model).fit(y, fh=[-2, 0, 1])
    assert adapter.estimator_.h == 1
    got = adapter.predict()
    own = model.clone().fit(long(y))
    fitted = own.fitted().set_index(["unique_id", "ds"])["yhat"]
    for shop in ("i0", "i1"):
        rows = got.loc[shop]
        assert rows.index.tolist() == list(pd.date_range("2024-01-28", periods=4)[[0, 2, 3]])
        np.testing.assert_allclose(rows["y"].iloc[:2], fitted.loc[shop].loc[rows.index[:2]])
        np.testing.assert_allclose(rows["y"].iloc[2], own.predict().set_index("unique_id").loc[shop, "yhat"])
    early = TsrsaForecaster(model).fit(y, fh=ForecastingHorizon(pd.DatetimeIndex(["2024-01-03"]), is_relative=False))
    assert early.predict()["y"].isna().all()  # within the first season: no fitted value


# ---------------------------------------------------------------------- X and update
def test_x_becomes_known_future_covariates_read_at_predict():
    y = panel(n_instances=2, length=50)
    X = pd.DataFrame({"promo": (np.arange(len(y)) % 5 == 0).astype(float)}, index=y.index)
    future_index = pd.MultiIndex.from_product([["i0", "i1"], pd.date_range("2024-02-20", periods=2)],
                                              names=["shop", "day"])
    X_future = pd.DataFrame({"promo": [1.0, 0.0, 0.0, 1.0]}, index=future_index)
    adapter = TsrsaForecaster(dlinear()).fit(y, X=X, fh=[1, 2])
    assert adapter.estimator_.covariates == {"future": ["promo"]}
    got = adapter.predict(X=X_future)
    frame = long(y).assign(promo=X["promo"].to_numpy())
    future = X_future.reset_index().rename(columns={"shop": "unique_id", "day": "ds"})
    own = dlinear(h=2, covariates={"future": ["promo"]}).fit(frame).predict(future_df=future)
    np.testing.assert_allclose(got["y"].to_numpy(), own["yhat"].to_numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="pass X to predict"):
        adapter.predict()


def test_declared_covariates_name_the_columns_of_x_that_are_read():
    y = panel(n_instances=2, length=50)
    X = pd.DataFrame({"temperature": np.cos(np.arange(len(y))), "promo": 1.0, "unused": 0.0}, index=y.index)
    model = dlinear(covariates={"past": ["temperature"], "future": ["promo"]})
    adapter = TsrsaForecaster(model).fit(y.groupby(level=0).head(45), X=X.groupby(level=0).head(45), fh=[1, 2])
    future = X.groupby(level=0).nth([45, 46])[["promo"]]  # the horizon's rows need only the future column
    assert adapter.predict(X=future).shape == (4, 1)
    with pytest.raises(ValueError, match="pass X with their values"):
        adapter.update(y.groupby(level=0).tail(5))
    adapter.update(y.groupby(level=0).tail(5), X=X.groupby(level=0).tail(5), update_params=False)
    assert adapter.cutoff[0] == y.index.get_level_values(1)[-1]


def test_update_without_refit_is_tsrsas_update_and_with_refit_a_fit_on_everything():
    y = panel(n_instances=2, length=50)
    head = y.groupby(level=0).head(40)
    tail = y.groupby(level=0).tail(10)
    adapter = TsrsaForecaster(dlinear(), refit_on_update=True).fit(head, fh=[1, 2, 3])
    own = dlinear().fit(long(head)).update(long(tail))
    weights = adapter.estimator_.network_.state_dict()
    stepped = adapter.update(tail, update_params=False).predict()
    np.testing.assert_allclose(stepped["y"].to_numpy(), own.predict()["yhat"].to_numpy(), rtol=1e-6)
    assert all(torch.equal(weights[k], v) for k, v in adapter.estimator_.network_.state_dict().items())
    assert adapter.cutoff[0] == pd.Timestamp("2024-02-19")
    adapter.update(tail, update_params=True)  # rows already seen: nothing new, nothing refitted
    assert adapter.estimator_.network_.state_dict().keys() == weights.keys()
    refit = TsrsaForecaster(dlinear()).fit(head, fh=[1, 2, 3]).update(tail, update_params=True).predict()
    np.testing.assert_allclose(refit["y"].to_numpy(), dlinear().fit(long(y)).predict()["yhat"].to_numpy(), rtol=1e-6)


# ---------------------------------------------------------------------- refusals
def test_bad_input_is_refused_with_a_clear_error():
    y = panel(n_instances=1, length=30).droplevel(0)
    with pytest.raises(TypeError, match="wraps a tsrsa forecaster"):
        TsrsaForecaster(estimator="RSA").fit(y, fh=[1])
    declared = dlinear(covariates={"past": ["temperature"]})
    with pytest.raises(ValueError, match="temperature"):
        TsrsaForecaster(declared).fit(y, fh=[1])
    clash = pd.DataFrame({"ds": np.arange(30.0)}, index=y.index)
    with pytest.raises(ValueError, match="rename the column"):
        TsrsaForecaster(dlinear()).fit(y, X=clash, fh=[1])


def test_capabilities_follow_the_wrapped_estimator():
    naive = TsrsaForecaster(SeasonalNaiveForecaster(h=1))
    assert not naive.get_tag("capability:exogenous") and not naive.get_tag("capability:pred_int")
    calibrated = TsrsaForecaster(SeasonalNaiveForecaster(h=1, conformal_windows=5, fill="ffill"))
    assert calibrated.get_tag("capability:pred_int") and calibrated.get_tag("capability:missing_values")
    assert TsrsaForecaster(dlinear(loss="quantile")).get_tag("capability:pred_int")
    assert TsrsaForecaster().get_tag("capability:exogenous")  # RSAForecaster's defaults
    assert TsrsaForecaster(dlinear()).get_params()["estimator__input_size"] == 8
