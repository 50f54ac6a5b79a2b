"""REM heads from the data: AR roots, seasonal periods, the stride-aware mapping, fallbacks."""
from __future__ import annotations

import contextlib
import io
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import RSAForecaster
from tsrsa.init import ar_roots, pooled_ar_roots, seasonal_periods
from tsrsa.init.heads import Estimates, assign_heads, estimate_panel


def _ar2(a1, a2, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = a1 * y[t - 1] + a2 * y[t - 2] + rng.standard_normal()
    return y


@pytest.mark.parametrize("a1,a2", [(1.5, -0.9), (0.6, -0.8), (1.2, -0.5)])
def test_complex_ar2_roots_recovered(a1, a2):
    true = np.roots([1.0, -a1, -a2])  # z^2 - a1 z - a2
    modulus, period = abs(true[0]), 2 * math.pi / abs(np.angle(true[0]))
    y = _ar2(a1, a2)
    for roots in (ar_roots(y, max_lag=6), pooled_ar_roots([y[:1000], y[1000:]])):
        pair = roots[np.abs(roots.imag) > 1e-8][0]
        assert abs(abs(pair) - modulus) < 0.03
        assert abs(2 * math.pi / abs(np.angle(pair)) - period) < 0.05 * period


def test_real_ar2_roots_recovered():
    y = _ar2(1.1, -0.24)  # roots 0.8 and 0.3
    roots = ar_roots(y, max_lag=6)
    assert np.allclose(np.sort(roots.real)[::-1][:2], [0.8, 0.3], atol=0.03)
    assert np.all(np.abs(roots.imag) < 1e-8)


def test_ar_roots_errors():
    with pytest.raises(ValueError, match="constant"):
        ar_roots(np.ones(100))
    with pytest.raises(ValueError, match="at least 8"):
        ar_roots(np.arange(5.0))
    with pytest.raises(ValueError, match="NaN"):
        ar_roots(np.r_[np.arange(20.0), np.nan])
    with pytest.raises(ValueError, match="ic="):
        ar_roots(_ar2(0.5, 0.1, n=100), ic="cv")


def test_pooled_roots_of_one_series_are_its_yule_walker_roots():
    from statsmodels.regression.linear_model import yule_walker

    y = _ar2(1.5, -0.9, n=600, seed=3)
    fit = yule_walker(y, order=2, method="mle", result_object=True)  # biased autocovariances, as pooled
    expected = np.roots(np.r_[1.0, -fit.rho])
    got = pooled_ar_roots([y], max_lag=2)
    assert len(got) == 2  # BIC keeps both lags of a strong AR(2)
    np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(expected), rtol=1e-10)
    with pytest.raises(ValueError, match="ic="):
        pooled_ar_roots([y], ic="cv")
    with pytest.raises(ValueError, match="max_lag=0"):
        pooled_ar_roots([y], max_lag=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_daily_and_weekly_periods_under_trend_and_noise(seed):
    rng = np.random.default_rng(seed)
    t = np.arange(24 * 7 * 10)
    y = 2 * np.sin(2 * np.pi * t / 24) + np.sin(2 * np.pi * t / 168) + 0.02 * t + rng.standard_normal(len(t))
    assert seasonal_periods(y, k=2, freq="h") == [24, 168]
    assert sorted(seasonal_periods(y, k=2)) == [24, 168]  # without the frequency's hints too


def test_no_period_in_noise_and_degenerate_input():
    rng = np.random.default_rng(0)
    assert seasonal_periods(rng.standard_normal(3000), freq="h") == []
    assert seasonal_periods(np.ones(500)) == []
    assert seasonal_periods(np.arange(5.0)) == []
    with pytest.raises(ValueError, match="NaN"):
        seasonal_periods(np.r_[np.arange(50.0), np.nan])


# ---------------------------------------------------------------------- mapping to heads
def test_mapping_is_stride_aware():
    root = 0.9 * np.exp(1j * 2 * math.pi / 24)  # a 24-step cycle
    estimates = Estimates(roots=np.array([0.95, root, np.conj(root), -0.5]), periods=[24, 168],
                          period_acf=[0.8, 0.6])
    counts = dict(n_regular=2, n_cyclic=1, n_dilated_regular=1, n_dilated_cyclic=1)
    one = assign_heads(estimates, stride=1, n_tokens=336, **counts)
    four = assign_heads(estimates, stride=4, n_tokens=84, **counts)
    np.testing.assert_allclose(one.lam[:2], [0.95, -0.5])
    np.testing.assert_allclose(four.lam[:2], [0.95**4, (-0.5) ** 4])
    np.testing.assert_allclose(one.theta[0], 2 * math.pi / 24)
    np.testing.assert_allclose(four.theta[0], 4 * 2 * math.pi / 24)
    np.testing.assert_allclose(four.gamma[0], 0.9**4)
    assert one.dilations == [24, 168] and four.dilations == [6, 42]  # round(p / s) tokens
    np.testing.assert_allclose([four.lam[2], four.gamma[1]], [0.8, 0.6])  # decay per season: the ACF
    again = assign_heads(estimates, stride=4, n_tokens=84, **counts)
    pd.testing.assert_frame_equal(pd.DataFrame(again.report), pd.DataFrame(four.report))  # deterministic
    assert again.dilations == four.dilations
    short = assign_heads(estimates, stride=4, n_tokens=24, **counts)  # 42 tokens > the window
    assert short.dilations == [6, 2] and short.report[-1]["source"] == "paper"


def test_cycles_too_fast_for_tokens_go_to_dilated_heads():
    root = 0.9 * np.exp(1j * 2 * math.pi / 7)  # 7 steps: under 2 tokens of 4 steps
    estimates = Estimates(roots=np.array([root, np.conj(root)]))
    init = assign_heads(estimates, stride=4, n_tokens=24, n_regular=0, n_cyclic=1, n_dilated_regular=1)
    assert np.isnan(init.gamma[0]) and init.report[0]["source"] == "paper"
    assert init.dilations == [2] and init.report[2]["estimate"].startswith("root period 7.00")


def test_unusable_estimates_keep_the_paper_values():
    estimates = Estimates(roots=np.array([1.02, 0.999]), notes=[])
    init = assign_heads(estimates, stride=2, n_tokens=10, n_regular=3, n_cyclic=1, n_dilated_regular=1,
                        dilations=4)
    assert np.isnan(init.lam[0]) and "non-stationary" in init.report[0]["note"]
    assert init.lam[1] == pytest.approx(0.99**2)  # |lam| clipped to 0.99 before the stride power
    assert np.isnan(init.lam[2]) and init.report[2]["source"] == "paper"
    assert np.isnan(init.gamma).all() and init.dilations == [4]


def _acf_reference(y, lag):
    """Biased sample autocorrelation at one lag of y less its least-squares line (float64)."""
    t = np.arange(len(y), dtype=np.float64)
    z = y - np.polyval(np.polyfit(t, y, 1), t)
    z = z - z.mean()
    return float(np.dot(z[:-lag], z[lag:]) / np.dot(z, z))


def test_the_pooled_autocorrelation_is_the_median_over_the_series_that_reach_each_lag():
    from tsrsa.init.seasonality import pooled_acf

    rng = np.random.default_rng(4)
    series = [_ar2(0.6, 0.2, n=300, seed=1) + 0.01 * np.arange(300), rng.standard_normal(120),
              np.sin(np.arange(200) / 3) + 0.3 * rng.standard_normal(200)]
    got = pooled_acf(series, 250)
    for lag in (1, 7, 24, 119):
        assert got[lag] == pytest.approx(np.median([_acf_reference(y, lag) for y in series]), abs=1e-12)
    # beyond the short series the median of the two others, beyond those the longest alone
    assert got[150] == pytest.approx(np.mean([_acf_reference(series[0], 150), _acf_reference(series[2], 150)]))
    assert got[250] == pytest.approx(_acf_reference(series[0], 250), abs=1e-12)
    assert got[0] == pytest.approx(1.0)


@pytest.mark.parametrize("n", [2, 3, 17, 144, 1000])
def test_the_numpy_detrend_and_autocorrelation_equal_scipy_and_statsmodels(n):
    from scipy import signal
    from statsmodels.tsa.stattools import acovf

    from tsrsa.init.seasonality import acf, detrend_linear

    y = np.random.default_rng(n).standard_normal(n).cumsum() + 0.3 * np.arange(n)
    np.testing.assert_allclose(detrend_linear(y), signal.detrend(y, type="linear"), rtol=0, atol=1e-11)
    lags = min(n - 1, 40)
    reference = acovf(y, adjusted=False, demean=True, fft=True, nlag=lags)
    np.testing.assert_allclose(acf(y, lags), reference / reference[0], rtol=0, atol=1e-13)
    np.testing.assert_array_equal(acf(np.full(n, 3.0), lags), np.zeros(lags + 1))


def test_the_pooled_yule_walker_steps_equal_statsmodels():
    from statsmodels.tsa.stattools import acovf
    from statsmodels.tsa.stattools import levinson_durbin as reference_recursion

    from tsrsa.init.ar import autocovariances, levinson_durbin

    rng = np.random.default_rng(1)
    series = [rng.standard_normal(30).cumsum(), _ar2(1.2, -0.5, n=200, seed=2), rng.standard_normal(40)]
    pooled = autocovariances(series, 25)
    reference = sum(len(y) * acovf((y - y.mean()) / y.std(), adjusted=False, demean=False, fft=False, nlag=25)
                    for y in series) / sum(len(y) for y in series)
    np.testing.assert_allclose(pooled, reference, rtol=0, atol=1e-13)
    phi, sigma = levinson_durbin(pooled, 25)
    _, _, _, reference_sigma, reference_phi = reference_recursion(pooled, nlags=25, isacov=True)
    np.testing.assert_allclose(phi, reference_phi, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sigma[1:], reference_sigma[1:], rtol=1e-12)
    assert sigma[0] == pooled[0]  # order 0: the variance itself (statsmodels leaves it 0)


@pytest.mark.parametrize("n", [7, 8, 144, 1001])
def test_the_numpy_periodogram_and_peaks_equal_scipy(n):
    from scipy import signal

    from tsrsa.init.seasonality import hann_periodogram, local_maxima

    x = np.random.default_rng(n).standard_normal(n)
    freqs, power, windowed = hann_periodogram(x)
    reference_freqs, reference_power = signal.periodogram(x, window="hann", detrend=False)
    np.testing.assert_allclose(freqs, reference_freqs, rtol=0, atol=1e-15)
    np.testing.assert_allclose(power, reference_power, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(windowed, x * signal.get_window("hann", n), rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(local_maxima(power), signal.find_peaks(power)[0])
    plateaus = np.array([0, 2, 2, 1, 3, 3, 3, 3, 0, 5, 5, 4, 4, 6, 6])  # flat tops, a flat end
    np.testing.assert_array_equal(local_maxima(plateaus), signal.find_peaks(plateaus)[0])


def _acf_curve(lags=200):
    """An autocorrelation whose value differs at every lag: 0.5 + 0.4 cos(2 pi l / 24) / (1 + l / 100)."""
    lag = np.arange(lags)
    return 0.5 + 0.4 * np.cos(2 * np.pi * lag / 24) / (1 + lag / 100)


def test_a_dilated_head_reads_the_autocorrelation_at_its_own_lag_and_names_its_period():
    acf = _acf_curve()
    estimates = Estimates(periods=[24, 168], period_acf=[0.8, 0.6])
    estimates.acf = acf
    counts = dict(n_regular=0, n_cyclic=0, n_dilated_regular=1)
    # from the periods: 24 steps at a stride of 5 is 5 tokens, so the head reads 25 steps back
    free = assign_heads(estimates, stride=5, n_tokens=40, **counts)
    assert free.dilations == [5] and free.lam[0] == pytest.approx(acf[25])
    assert free.report[0]["estimate"] == "period 24 steps, read at lag 25 steps"
    # a given dilation carries the period it matches, whatever the periods' order; at the period's own
    # lag, the season's autocorrelation as estimated with the period
    weekly = assign_heads(estimates, stride=4, n_tokens=84, dilations=[42], **counts)
    assert weekly.lam[0] == pytest.approx(0.6) and weekly.report[0]["estimate"] == "period 168 steps"
    # a given dilation that matches no period reads the autocorrelation at its lag
    other = assign_heads(estimates, stride=4, n_tokens=84, dilations=5, **counts)
    assert other.lam[0] == pytest.approx(acf[20]) and other.report[0]["source"] == "autocorrelation"
    assert other.report[0]["estimate"] == "lag 20 steps"
    pair = assign_heads(estimates, stride=4, n_tokens=84, n_regular=0, n_cyclic=0, n_dilated_cyclic=1,
                        dilations=[6])
    assert pair.gamma[0] == pytest.approx(0.8) and pair.report[0]["estimate"] == "period 24 steps"


def test_unshared_cyclic_pairs_and_a_dilated_head_start_from_the_data(monkeypatch):
    import tsrsa.init.heads as heads

    root = 0.9 * np.exp(2j * np.pi / 20)  # a 20-step cycle: 4 tokens of 5 steps
    estimates = Estimates(roots=np.array([root, np.conj(root), 0.8]), periods=[24], period_acf=[0.7])
    estimates.acf = _acf_curve()
    seen = {}

    def estimated(*args, **kwargs):
        seen.update(kwargs)
        return estimates

    monkeypatch.setattr(heads, "estimate_panel", estimated)
    model = RSAForecaster(h=12, input_size=100, patch_len=5, d_model=16, n_heads=8, n_layers=2, d_ff=16,
                          rem={"n_regular": 1, "n_cyclic": 2, "n_dilated_regular": 1, "share_cyclic": False},
                          max_epochs=1,
                          learning_rate=1e-12, random_state=0).fit(_hourly(length=300, ids=("a",)))
    assert seen["max_lag"] >= 19 * 5  # the autocorrelation reaches every dilation the window holds
    s = 5
    lam = [0.8**s, _acf_curve()[25]]  # the regular head; the dilated head at 5 tokens = 25 steps
    gamma = [0.9**s, 0.9**s, 0.7 ** (s / 24), 0.7 ** (s / 24)]  # per cyclic head: the root, then period 24
    theta = [2 * np.pi / 20 * s] * 2 + [2 * np.pi * s / 24] * 2
    assert model.network_.config.attention_options["dilations"] == [5]
    for block in model.network_.blocks:
        attn = block.attn
        assert attn.plan.kinds == ("regular", "cyclic_cos", "cyclic_sin", "cyclic_cos", "cyclic_sin", "regular")
        np.testing.assert_allclose(torch.tanh(attn.eta).detach().numpy(), lam, rtol=1e-5)
        np.testing.assert_allclose(torch.sigmoid(attn.nu).detach().numpy(), gamma, rtol=1e-5)
        np.testing.assert_allclose(attn.theta.detach().numpy(), theta, rtol=1e-5)
    report = model.init_report_
    assert report["dilation"].tolist() == [5, 5, 5, 5, 5, 25]
    assert report.loc[5, "estimate"] == "period 24 steps, read at lag 25 steps"
    assert report["source"].tolist() == ["ar_root"] * 3 + ["seasonal_period"] * 3


def test_panel_estimates_fall_back_silently():
    values = np.r_[np.ones(50), np.arange(10.0)]
    estimates = estimate_panel(values, np.array([0, 50, 60]), np.array([50, 10]))
    assert estimates.roots.size == 0 and estimates.periods == []
    assert "constant or shorter than 16" in estimates.notes[0]


# ---------------------------------------------------------------------- RSAForecaster(rem_init="data")
def _hourly(length=24 * 7 * 3, seed=0, ids=("a", "b")):
    rng = np.random.default_rng(seed)
    frames = []
    for k, sid in enumerate(ids):
        t = np.arange(length)
        y = 10 * (k + 1) + 3 * np.sin(2 * np.pi * t / 24) + 0.5 * rng.standard_normal(length)
        frames.append(pd.DataFrame({"unique_id": sid, "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
                                    "y": y}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def data_init_model():
    model = RSAForecaster(h=12, input_size=96, patch_len=8, d_model=16, n_heads=4, n_layers=1, d_ff=16,
                          max_epochs=1, start=None, random_state=0)  # the data start alone
    return model.fit(_hourly())


def test_data_initialisation_sets_heads_and_dilations(data_init_model):
    model = data_init_model
    report = model.init_report_
    assert list(report.columns) == ["head", "rem_type", "source", "estimate", "lambda_init", "gamma_init",
                                    "theta_init", "dilation", "note"]
    assert report["rem_type"].tolist() == ["regular", "cyclic_cos", "cyclic_sin", "regular"]
    dilated = report.iloc[3]
    assert dilated["source"] == "seasonal_period" and dilated["estimate"] == "period 24 steps"
    assert dilated["dilation"] == 24  # 3 tokens of 8 steps
    assert model.network_.config.attention_options["dilations"] == [3]
    assert (report["source"] != "paper").all()
    explained = model.explain()
    np.testing.assert_allclose(explained["lambda_init"].to_numpy(), report["lambda_init"].to_numpy())
    assert explained.loc[3, "dilation"] == 24


def test_data_initialisation_is_saved(data_init_model, tmp_path):
    data_init_model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    pd.testing.assert_frame_equal(loaded.init_report_, data_init_model.init_report_)
    pd.testing.assert_frame_equal(loaded.predict(), data_init_model.predict())


def test_estimates_use_the_training_part_only():
    rng = np.random.default_rng(1)
    n_train, n_val = 24 * 7 * 3, 24 * 7 * 2
    t = np.arange(n_train + n_val)
    y = np.where(t < n_train, 3 * np.sin(2 * np.pi * t / 24), 30 * np.sin(2 * np.pi * t / 12))
    frame = pd.DataFrame({"unique_id": "a", "ds": pd.date_range("2024-01-01", periods=len(t), freq="h"),
                          "y": y + 0.3 * rng.standard_normal(len(t))})
    model = RSAForecaster(h=12, input_size=96, patch_len=4, d_model=8, n_heads=4, n_layers=1, d_ff=8,
                          max_epochs=1, val_size=n_val, start=None, random_state=0).fit(frame)
    assert model.init_report_.iloc[3]["estimate"] == "period 24 steps"


def test_constant_and_short_series_fall_back_silently():
    frame = pd.DataFrame({"unique_id": "flat", "ds": pd.date_range("2024-01-01", periods=40, freq="h"),
                          "y": 5.0})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=8, n_heads=4, n_layers=1,
                              max_epochs=1, random_state=0).fit(frame)
    assert out.getvalue() == err.getvalue() == "" and not caught
    report = model.init_report_
    assert (report["source"] == "paper").all()
    assert report["note"].str.contains("constant or shorter than 16").all()
    assert model.network_.config.attention_options["dilations"] == [2]


def test_paper_and_explicit_initialisations_are_reported():
    frame = _hourly(length=200, ids=("a",))
    paper = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=8, n_heads=4, n_layers=1, max_epochs=1,
                          rem={"init": "paper"}, random_state=0).fit(frame)
    assert (paper.init_report_["source"] == "paper").all()
    assert paper.init_report_.loc[1, "theta_init"] == pytest.approx(math.pi / 4)
    explicit = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=8, n_heads=4, n_layers=1, max_epochs=1,
                             rem={'init': {"lambda": 0.5}}, random_state=0).fit(frame)
    assert (explicit.init_report_["source"] == "rem_init").all()
    assert explicit.init_report_.loc[0, "lambda_init"] == pytest.approx(0.5)
