"""predict(level=...) from a quantile or distribution head fitted without a conformal calibration."""
import numpy as np
import pandas as pd
import pytest

import tsrsa


def panel(n=96):
    t = np.arange(n)
    rng = np.random.default_rng(0)
    return pd.concat([pd.DataFrame({"unique_id": sid, "ds": pd.date_range("2020-01-01", periods=n, freq="D"),
                                    "y": 5 + k + np.sin(2 * np.pi * t / 7) + 0.3 * rng.standard_normal(n)})
                      for k, sid in enumerate("ab")], ignore_index=True)


def dlinear(**options):
    return tsrsa.DLinearForecaster(h=7, input_size=14, max_epochs=2, random_state=0, **options).fit(panel())


def test_a_quantile_head_answers_level_from_its_quantiles():
    model = dlinear(loss="quantile")  # the default quantiles 0.1, 0.5, 0.9
    out = model.predict(level=[80])
    np.testing.assert_array_equal(out["yhat_lo_80"], out["yhat_q10"])
    np.testing.assert_array_equal(out["yhat_hi_80"], out["yhat_q90"])
    assert list(out.columns[-2:]) == ["yhat_lo_80", "yhat_hi_80"]
    assert (out["yhat_lo_80"] <= out["yhat"]).all() and (out["yhat"] <= out["yhat_hi_80"]).all()


def test_a_distribution_head_answers_from_the_quantiles_it_was_asked_for():
    model = dlinear(loss="normal", quantiles=[0.05, 0.25, 0.75, 0.95])
    out = model.predict(level=[50, 90], df=panel().groupby("unique_id").tail(30))
    np.testing.assert_array_equal(out["yhat_lo_90"], out["yhat_q5"])
    np.testing.assert_array_equal(out["yhat_hi_50"], out["yhat_q75"])
    assert list(out.columns[-4:]) == ["yhat_lo_50", "yhat_hi_50", "yhat_lo_90", "yhat_hi_90"]


def test_a_level_without_its_quantiles_is_refused_before_any_work():
    model = dlinear(loss="quantile")
    with pytest.raises(ValueError, match=r"quantiles 0.025 and 0.975 .* outputs \[0.1, 0.9\]"):
        model.predict(level=[95])
    with pytest.raises(ValueError, match="conformal_windows"):
        dlinear().predict(level=[80])  # a point loss has no quantiles to read


def test_a_conformal_calibration_wins_over_the_head():
    model = dlinear(loss="quantile", conformal_windows=4)
    out = model.predict(level=[80])
    assert not np.array_equal(out["yhat_lo_80"], out["yhat_q10"])
    np.testing.assert_allclose(out["yhat_hi_80"] - out["yhat"], out["yhat"] - out["yhat_lo_80"])  # symmetric
