"""The forecast plot draws every band the frame holds: quantile pairs and conformal intervals."""
import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.estimator.plotting import bands

pytest.importorskip("matplotlib")


def series(n=120):
    t = np.arange(n)
    return pd.Series(10 + np.sin(2 * np.pi * t / 12) + 0.2 * np.random.default_rng(0).standard_normal(n),
                     index=pd.date_range("2000-01", periods=n, freq="MS"), name="a")


def labels(fig):
    return [text.get_text() for text in fig.axes[0].get_legend().get_texts()]


def test_interval_columns_are_drawn_widest_first():
    model = tsrsa.SeasonalNaiveForecaster(h=6, season_length=12, conformal_windows=19).fit(series(240))
    forecast = model.predict(level=[80, 95])
    fig = model.plot(forecast=forecast)
    assert labels(fig) == ["history", "95% interval", "80% interval", "forecast"]
    band = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1]  # the 95 % band's outline
    np.testing.assert_allclose([band.min(), band.max()],
                               [forecast["yhat_lo_95"].min(), forecast["yhat_hi_95"].max()])


def test_a_forecast_without_bands_draws_none():
    model = tsrsa.SeasonalNaiveForecaster(h=6, season_length=12).fit(series())
    assert labels(model.plot()) == ["history", "forecast"]


def test_bands_pair_quantiles_around_the_median_and_intervals_by_level():
    frame = pd.DataFrame(columns=["yhat", "yhat_q5", "yhat_q25", "yhat_q75", "yhat_q95", "yhat_lo_97.5",
                                  "yhat_hi_97.5", "yhat_lo_50"])  # a lone side is no band
    assert bands(frame) == [("yhat_lo_97.5", "yhat_hi_97.5", 97.5), ("yhat_q5", "yhat_q95", 90.0),
                            ("yhat_q25", "yhat_q75", 50.0)]


def test_a_polars_forecast_is_drawn():
    pl = pytest.importorskip("polars")
    frame = series().rename("y").rename_axis("ds").reset_index().assign(unique_id="a")
    model = tsrsa.SeasonalNaiveForecaster(h=6, season_length=12).fit(pl.from_pandas(frame))
    assert isinstance(model.predict(), pl.DataFrame)
    assert labels(model.plot()) == ["history", "forecast"]
