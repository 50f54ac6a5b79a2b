"""Distribution losses (normal, student_t, negative_binomial), sample(), CRPS and the weighted quantile loss.

The likelihoods and scores are checked elementwise against float64 references (scipy, closed forms,
direct sums); the forecasters on tiny models (one or two epochs).
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from sklearn.exceptions import NotFittedError

import tsrsa
from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster
from tsrsa.metrics import crps, crps_ensemble, crps_normal, evaluate, pinball, weighted_quantile_loss
from tsrsa.nn import BackboneConfig, ForecastingTransformer, get_distribution, make_loss

from conftest import make_panel

H = 4
TINY = dict(h=H, input_size=8, max_epochs=1, batch_size=32, random_state=0)
LOSSES = ["normal", "student_t", "negative_binomial"]


def counts(n_series=2, length=40, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({"unique_id": f"c{k}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
                                    "y": rng.poisson(5 * (k + 1) * (1.5 + np.sin(2 * np.pi * t / 6))).astype(float)})
                      for k in range(n_series)], ignore_index=True)


def data_for(loss):
    return counts() if loss == "negative_binomial" else make_panel(n_series=2)


def model_for(loss, cls=DLinearForecaster, **kw):
    extra = {"scaler": None} if loss == "negative_binomial" else {}
    arch = {"hidden_size": 4, "n_layers": 1} if cls is LSTMForecaster else {}
    return cls(loss=loss, **{**TINY, **extra, **arch, **kw})


# ---------------------------------------------------------------------- the likelihood
@pytest.mark.parametrize("loss", LOSSES)
def test_loss_is_the_mean_negative_log_likelihood(loss):
    gen = torch.Generator().manual_seed(0)
    output = get_distribution(loss)
    raw = torch.randn(5, 3, output.n_outputs, generator=gen, dtype=torch.float64)
    target = torch.randint(0, 9, (5, 3), generator=gen).double() if loss == "negative_binomial" else \
        torch.randn(5, 3, generator=gen, dtype=torch.float64)
    got = make_loss(loss)(raw, target)
    r, y = raw.numpy(), target.numpy()
    sigma = np.exp(r[..., 1]) + 1e-3
    if loss == "normal":
        logp = stats.norm.logpdf(y, r[..., 0], sigma)
    elif loss == "student_t":
        logp = stats.t.logpdf(y, 2 + np.log1p(np.exp(r[..., 2])), r[..., 0], sigma)
    else:
        mean, total = np.exp(r[..., 0]), np.log1p(np.exp(r[..., 1])) + 1e-3
        logp = stats.nbinom.logpmf(y, total, total / (total + mean))
    np.testing.assert_allclose(got.item(), -logp.mean(), rtol=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
def test_parameters_follow_the_units_of_the_data(loss):
    """Scaling a window by s (and shifting it, where the family allows) moves the location with the data,
    multiplies sigma (or a count's mean) by s and leaves the shapes alone: the normalisation is exact."""
    torch.manual_seed(0)
    n = get_distribution(loss).n_outputs
    net = ForecastingTransformer(BackboneConfig(input_size=8, h=3, patch_len=4, d_model=8, n_heads=2, n_layers=1,
                                                d_ff=8, dropout=0.0, n_outputs=n, distribution=loss)).double().eval()
    x = torch.rand(4, 8, dtype=torch.float64) * 5 + 2
    s, m = 3.0, (0.0 if loss == "negative_binomial" else 7.0)
    with torch.no_grad():
        a, b = net(x), net(x * s + m)
    kinds = get_distribution(loss).kinds
    for k, kind in enumerate(kinds):
        expected = {"location": a[..., k] * s + m, "log_scale": a[..., k] + np.log(s), "free": a[..., k]}[kind]
        torch.testing.assert_close(b[..., k], expected, rtol=1e-4, atol=1e-4)  # RevIN's eps: near exact


# ---------------------------------------------------------------------- forecasters
@pytest.mark.parametrize("loss", LOSSES)
def test_predict_gives_the_mean_and_the_asked_quantiles(loss, tmp_path):
    df = data_for(loss)
    model = model_for(loss, quantiles=[0.1, 0.5, 0.9]).fit(df)
    fc = model.predict()
    assert list(fc.columns) == ["unique_id", "ds", "yhat", "yhat_q10", "yhat_q50", "yhat_q90"]
    assert (fc["yhat_q10"] <= fc["yhat_q50"]).all() and (fc["yhat_q50"] <= fc["yhat_q90"]).all()
    assert (fc["yhat_q10"] < fc["yhat_q90"]).any()
    if loss != "negative_binomial":  # symmetric: the mean is the median
        np.testing.assert_allclose(fc["yhat"], fc["yhat_q50"], rtol=1e-9)
    else:
        assert (fc[["yhat_q10", "yhat_q50", "yhat_q90"]] % 1 == 0).all().all() and (fc["yhat"] > 0).all()
    if loss == "normal":
        assert list(model_for(loss).fit(df).predict().columns) == ["unique_id", "ds", "yhat"]  # none asked
    model.save(tmp_path / "m")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "m").predict(), fc)


@pytest.mark.parametrize("loss,cls", [("normal", LSTMForecaster), ("student_t", DLinearForecaster),
                                      ("negative_binomial", LSTMForecaster)])
def test_sample_paths(loss, cls):
    df = data_for(loss)
    model = model_for(loss, cls, quantiles=[0.1, 0.9]).fit(df)
    states = torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    paths = model.sample(4000, random_state=0)
    assert torch.equal(states[0], torch.get_rng_state()) and random.getstate() == states[2]
    assert np.array_equal(states[1], np.random.get_state()[1])
    assert list(paths.columns) == ["unique_id", "ds", "sample", "yhat"] and len(paths) == 2 * 4000 * H
    first = paths.iloc[:H]
    assert (first["sample"] == 0).all() and first["ds"].is_monotonic_increasing
    pd.testing.assert_frame_equal(paths, model.sample(4000, random_state=0))
    fc = model.predict()
    grouped = paths.groupby(["unique_id", "ds"], sort=True)["yhat"]
    spread = (fc["yhat_q90"] - fc["yhat_q10"]).to_numpy()
    np.testing.assert_allclose(grouped.mean().to_numpy(), fc["yhat"], atol=0.1 * spread.max() + 1e-9)
    np.testing.assert_allclose(grouped.quantile(0.9).to_numpy(), fc["yhat_q90"], atol=0.1 * spread.max() + 1)
    if loss == "negative_binomial":
        assert (paths["yhat"] % 1 == 0).all() and (paths["yhat"] >= 0).all()
    short = model.sample(2, h=2, df=df[df["unique_id"] == "c1" if loss == "negative_binomial" else df["unique_id"] == "s1"])
    assert len(short) == 4 and short["unique_id"].nunique() == 1


def test_streaming_model_samples():
    model = RSAForecaster(d_model=8, n_heads=4, n_layers=1, d_ff=8, patch_len=4, stream=True, loss="normal",
                          **TINY).fit(make_panel(n_series=2))
    paths = model.sample(3, random_state=1)
    assert len(paths) == 2 * 3 * H and np.isfinite(paths["yhat"]).all()
    fitted = model.fitted(step=2)  # the streaming state's batched forecasts at past cutoffs
    assert len(fitted) == 2 * (40 - 8 - 1) and np.isfinite(fitted["residual"]).all()


def test_refusals():
    df = counts()
    fractional = df.assign(y=df["y"] + np.where(df.index == 7, 0.5, 0.0))
    with pytest.raises(ValueError, match=r"'y' of series 'c0' is \d+\.5 at 2024-01-01 07:00:00 \(1 value\(s\) are not non-negative integers"):
        model_for("negative_binomial").fit(fractional)
    with pytest.raises(ValueError, match="is -1.0 at"):
        model_for("negative_binomial").fit(df.assign(y=np.where(df.index == 3, -1.0, df["y"])))
    with pytest.raises(ValueError, match="scaler='standard' would shift or rescale them: pass scaler=None"):
        model_for("negative_binomial", scaler="standard").fit(df)
    with pytest.raises(ValueError, match="need loss='quantile' or a distribution loss"):
        DLinearForecaster(quantiles=[0.1], **TINY).fit(df)
    model = model_for("negative_binomial").fit(df)
    before, state = model.predict(), dict(vars(model))
    with pytest.raises(ValueError, match="not non-negative integers"):
        model.fit(fractional)  # a refit refused: the fitted model is kept
    with pytest.raises(ValueError, match="not non-negative integers"):
        model.predict(df=fractional)
    assert all(vars(model)[k] is v for k, v in state.items())
    pd.testing.assert_frame_equal(model.predict(), before)
    with pytest.raises(ValueError, match="n=0 must be >= 1"):
        model.sample(0)
    with pytest.raises(TypeError, match="n must be an int"):
        model.sample(2.5)
    with pytest.raises(TypeError, match="random_state must be None"):
        model.sample(2, random_state="x")
    with pytest.raises(ValueError, match="above the horizon"):
        model.sample(2, h=H + 1)
    with pytest.raises(ValueError, match="loss='mae' gives none: fit with loss='normal'"):
        DLinearForecaster(**TINY).fit(df).sample(2)
    with pytest.raises(NotFittedError):
        model_for("normal").sample(2)


def test_quantile_loss_without_quantiles_has_no_duplicate_median():
    df = make_panel(n_series=2)
    fc = DLinearForecaster(loss="quantile", **TINY).fit(df).predict()
    assert list(fc.columns) == ["unique_id", "ds", "yhat", "yhat_q10", "yhat_q90"]
    asked = DLinearForecaster(loss="quantile", quantiles=[0.5, 0.9], **TINY).fit(df).predict()
    assert list(asked.columns) == ["unique_id", "ds", "yhat", "yhat_q50", "yhat_q90"]
    np.testing.assert_array_equal(asked["yhat"], asked["yhat_q50"])


# ---------------------------------------------------------------------- scores
def test_crps_of_samples_against_a_direct_sum_and_the_normal_closed_form():
    rng = np.random.default_rng(0)
    y, x = rng.normal(size=(3, 2)), rng.normal(size=(3, 2, 7))
    direct = np.abs(x - y[..., None]).mean(-1) - 0.5 * np.abs(x[..., :, None] - x[..., None, :]).mean((-1, -2))
    np.testing.assert_allclose(crps_ensemble(y, x), direct, rtol=1e-12)
    np.testing.assert_allclose(crps_ensemble(y, np.moveaxis(x, -1, 0), axis=0), direct, rtol=1e-12)
    assert crps(y, x) == pytest.approx(direct.mean(), rel=1e-12)
    mu, sigma = np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 3.0])
    obs = np.array([0.3, 2.0, -2.5])
    draws = mu[:, None] + sigma[:, None] * rng.standard_normal((3, 200_000))
    np.testing.assert_allclose(crps_normal(obs, mu, sigma), crps_ensemble(obs, draws), rtol=1e-2)
    # at the mean of a standard normal the closed form is (sqrt(2) - 1) / sqrt(pi)
    assert crps_normal(0.0, 0.0, 1.0) == pytest.approx((np.sqrt(2) - 1) / np.sqrt(np.pi), rel=1e-12)
    with pytest.raises(ValueError, match="samples has shape"):
        crps_ensemble(y, x[..., 0])
    with pytest.raises(ValueError, match="sigma must be > 0"):
        crps_normal(obs, mu, -sigma)


def test_weighted_quantile_loss_against_its_formula():
    rng = np.random.default_rng(1)
    y = rng.normal(5, 1, size=20)
    q10, q90 = y - rng.random(20), y + rng.normal(0, 1, size=20)
    expected = np.mean([2 * np.sum(np.maximum(q * (y - f), (q - 1) * (y - f))) / np.sum(np.abs(y))
                        for q, f in ((0.1, q10), (0.9, q90))])
    assert weighted_quantile_loss(y, [q10, q90], [0.1, 0.9]) == pytest.approx(expected, rel=1e-12)
    assert weighted_quantile_loss(y, [q10], [0.1]) == pytest.approx(2 * pinball(y, q10, 0.1) * 20 / np.abs(y).sum())
    frame = pd.DataFrame({"y": y, "yhat": y, "yhat_q10": q10, "yhat_q90": q90})
    assert evaluate(frame, ["wql"])["wql"].iloc[0] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="divides by sum"):
        weighted_quantile_loss(np.zeros(3), [np.zeros(3)], [0.5])
    with pytest.raises(ValueError, match="give one per level"):
        weighted_quantile_loss(y, [q10], [0.1, 0.9])
    with pytest.raises(ValueError, match="wql needs quantile columns"):
        evaluate(frame[["y", "yhat"]], ["wql"])
