"""ensemble_size: several networks trained apart, their forecasts averaged."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa.convert import to_recurrent
from tsrsa.estimator.ensembles import member_weights
from tsrsa.nn.ensemble import MemberMean, members_of


def frame(n: int = 160, seed: int = 0) -> pd.DataFrame:
    t = np.arange(n)
    y = np.sin(2 * np.pi * t / 12) + 0.3 * np.random.default_rng(seed).standard_normal(n)
    return pd.DataFrame({"unique_id": "a", "ds": pd.date_range("2020-01-01", periods=n, freq="h"), "y": y})


SMALL = {"h": 6, "input_size": 24, "max_epochs": 3, "val_size": 12, "trainer": {"num_threads": 1}}
RSA_SMALL = {**SMALL, "d_model": 8, "n_heads": 4, "n_layers": 1, "d_ff": 16}


@pytest.mark.parametrize("cls, params", [(tsrsa.DLinearForecaster, {**SMALL, "loss": "quantile"}),
                                         (tsrsa.RSAForecaster, RSA_SMALL)])
def test_an_ensemble_forecasts_the_mean_of_the_fits_seeded_after_it(cls, params):
    df = frame()
    ensemble = cls(**params, ensemble_size=3, random_state=5).fit(df)
    singles = [cls(**params, random_state=5 + k).fit(df) for k in range(3)]
    forecast = ensemble.predict()
    columns = [c for c in forecast.columns if c.startswith("yhat")]
    assert len(columns) == (3 if params.get("loss") == "quantile" else 1)
    for column in columns:  # every quantile level averaged on its own
        mean = np.mean([s.predict()[column].to_numpy() for s in singles], axis=0)
        np.testing.assert_allclose(forecast[column].to_numpy(), mean, atol=1e-5)
    assert ensemble.best_epoch_ == [s.best_epoch_ for s in singles]
    history = ensemble.fit_history_
    assert sorted(history["member"].unique()) == [0, 1, 2]
    for k, single in enumerate(singles):
        np.testing.assert_allclose(history.loc[history.member == k, "val_loss"], single.fit_history_["val_loss"])
    assert "member" not in singles[0].fit_history_.columns


def test_a_saved_ensemble_loads_with_every_member(tmp_path):
    df = frame()
    model = tsrsa.TransformerForecaster(**RSA_SMALL, ensemble_size=2, random_state=0).fit(df)
    model.save(tmp_path / "model")
    loaded = tsrsa.load(tmp_path / "model")
    assert isinstance(loaded.network_, MemberMean) and len(members_of(loaded.network_)) == 2
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())
    assert loaded.best_epoch_ == model.best_epoch_ and loaded.readout_tokens_ == model.readout_tokens_


def test_fine_tuning_continues_each_member_from_its_own_weights():
    df = frame()
    model = tsrsa.DLinearForecaster(**SMALL, start=None, ensemble_size=2, random_state=1).fit(df)
    before = model.predict()["yhat"].to_numpy()
    first, second = (m.trend_map.weight.detach().clone() for m in members_of(model.network_))
    assert not torch.equal(first, second)
    model.fine_tune(df, max_epochs=1, learning_rate=1e-12)  # a step too small to move a weight
    members = members_of(model.network_)
    assert len(members) == 2 and model.fit_history_["member"].tolist() == [0, 1]
    torch.testing.assert_close(members[0].trend_map.weight, first)
    torch.testing.assert_close(members[1].trend_map.weight, second)
    np.testing.assert_allclose(model.predict()["yhat"].to_numpy(), before, atol=1e-5)


def test_member_weights_take_a_members_own_entries_or_a_single_networks():
    single = {"w": torch.ones(2)}
    assert member_weights(single, 3) is single
    ensemble = {"members.0.w": torch.zeros(2), "members.1.w": torch.ones(2)}
    assert torch.equal(member_weights(ensemble, 1)["w"], torch.ones(2))
    with pytest.raises(ValueError, match="without a member 2"):
        member_weights(ensemble, 2)


def test_rsa_explains_each_member_and_refuses_one_it_has_not():
    model = tsrsa.RSAForecaster(**RSA_SMALL, ensemble_size=2, random_state=0).fit(frame())
    first, second = model.explain(), model.explain(member=1)
    assert list(first.columns) == list(second.columns) and len(first) == len(second)
    assert not np.allclose(first["gate"].to_numpy(dtype=float), second["gate"].to_numpy(dtype=float),
                           equal_nan=True)  # trained apart: their gates moved apart
    with pytest.raises(ValueError, match="member=2 is not one of 0..1"):
        model.explain(member=2)
    with pytest.raises(ValueError, match="converts one network"):
        to_recurrent(model, frame(), feature_size=4, finetune_epochs=1)


@pytest.mark.parametrize("value, error", [(0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError),
                                          ("3", TypeError), ("all", TypeError)])
def test_a_bad_ensemble_size_is_refused_by_name(value, error):
    with pytest.raises(error, match="ensemble_size"):
        tsrsa.DLinearForecaster(**SMALL, ensemble_size=value).fit(frame())


@pytest.mark.parametrize("params, words", [
    ({"stream": True, "start": None}, "stream=True"),
    ({"loss": "normal", "start": None}, "distribution"),
    ({"trainer": {"checkpoint_dir": "folder"}}, "checkpoint_dir"),
])
def test_what_keeps_one_networks_state_refuses_an_ensemble(params, words, tmp_path):
    model = tsrsa.TransformerForecaster(**RSA_SMALL, random_state=0).fit(frame())
    before = model.predict()
    params = {k: {"checkpoint_dir": str(tmp_path / v["checkpoint_dir"])} if k == "trainer" else v
              for k, v in params.items()}
    model.set_params(ensemble_size=2, **params)
    with pytest.raises(ValueError, match=words):
        model.fit(frame(seed=1))
    model.set_params(ensemble_size=1, stream=False, loss="mae", start="auto", trainer=SMALL["trainer"])
    pd.testing.assert_frame_equal(model.predict(), before)  # the refused fit changed nothing
    assert not (tmp_path / "folder").exists()


def test_auto_and_the_default_fit_one_network_and_a_count_fits_that_many():
    short, long = frame(160), frame(2200)  # 119 and 2,159 training windows
    quick = {"h": 6, "input_size": 24, "val_size": 12, "start": None, "random_state": 0, "max_epochs": 2,
             "trainer": {"num_threads": 1, "early_stopping_patience": 2}}
    assert tsrsa.DLinearForecaster(h=6).ensemble_size == 1
    for size in (1, "auto"):
        model = tsrsa.DLinearForecaster(**quick, ensemble_size=size).fit(short)
        assert model.ensemble_size_ == model.plan_.members == 1 and "member" not in model.fit_history_
    assert tsrsa.DLinearForecaster(**quick, ensemble_size=2).fit(long).ensemble_size_ == 2


def test_the_callbacks_see_each_members_epochs_named_by_member():
    records = []
    model = tsrsa.DLinearForecaster(**{**SMALL, "trainer": {"num_threads": 1, "callbacks": [records.append]}},
                                    start=None, ensemble_size=2, random_state=0)
    model.fit(frame())
    assert [(r["member"], r["epoch"]) for r in records] == [(k, e) for k in (0, 1) for e in (1, 2, 3)]
    single = []
    tsrsa.DLinearForecaster(**{**SMALL, "trainer": {"num_threads": 1, "callbacks": [single.append]}}, start=None,
                            ensemble_size=1).fit(frame())
    assert len(single) == 3 and "member" not in single[0]
