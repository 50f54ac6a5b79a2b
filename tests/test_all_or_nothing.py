"""A call that raises changes nothing: a failed refit keeps the fitted model, a failed first fit leaves
the estimator unfitted, a failed search leaves the estimator it was given as it was."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import tsrsa
from tsrsa import SeasonalNaiveForecaster, TransformerForecaster
from tsrsa.estimator.neural import NeuralForecaster

from conftest import make_panel

SMALL = dict(h=4, input_size=8, d_model=8, n_heads=2, n_layers=1, d_ff=8, max_epochs=2, random_state=0)
DATA = make_panel(n_series=2, length=60)


def diverging(model):
    """The same estimator set to a step size whose first update turns the loss NaN."""
    return model.set_params(learning_rate=1e12, max_epochs=3)


def test_a_refit_that_fails_keeps_the_fitted_model_bit_for_bit():
    model = TransformerForecaster(**SMALL).fit(DATA)
    before, network, history = model.predict()["yhat"].to_numpy(), model.network_, model.fit_history_
    state = {name: value.clone() for name, value in network.state_dict().items()}
    with pytest.raises(FloatingPointError, match="left as it was before fit") as info:
        diverging(model).fit(DATA.assign(y=DATA["y"] * 3))
    assert np.array_equal(model.predict()["yhat"].to_numpy(), before)
    assert model.network_ is network and model.fit_history_ is history
    assert all(torch_equal(network.state_dict()[name], value) for name, value in state.items())
    partial = info.value.estimator  # the weights training reached are not lost either
    assert partial.network_ is not network and len(partial.fit_history_) == 0
    assert np.all(np.isfinite(partial.predict()["yhat"]))


def torch_equal(a, b) -> bool:
    return bool((a == b).all())


def test_a_first_fit_that_fails_leaves_the_estimator_unfitted():
    model = diverging(TransformerForecaster(**SMALL))
    params = model.get_params()
    with pytest.raises(FloatingPointError):
        model.fit(DATA)
    assert vars(model) == params  # nothing fitted, nothing private left behind
    with pytest.raises(NotFittedError):
        model.predict()


def test_an_interrupted_refit_keeps_the_fitted_model(monkeypatch):
    """Ctrl-C in a notebook: the KeyboardInterrupt goes through, the old model stays."""
    model = TransformerForecaster(**SMALL).fit(DATA)
    before = model.predict()["yhat"].to_numpy()
    attributes = dict(vars(model))

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(NeuralForecaster, "_train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.fit(DATA.assign(y=DATA["y"] + 1))
    assert vars(model).keys() == attributes.keys()
    assert all(vars(model)[name] is value for name, value in attributes.items())
    assert np.array_equal(model.predict()["yhat"].to_numpy(), before)


def test_a_refit_refused_at_validation_keeps_the_fitted_model():
    model = SeasonalNaiveForecaster(h=4, season_length=6).fit(DATA)
    before = model.predict()
    with pytest.raises(ValueError, match="observations but needs"):
        model.fit(DATA.groupby("unique_id").head(3))
    pd.testing.assert_frame_equal(model.predict(), before)


def test_a_search_whose_every_trial_fails_raises_the_cause_and_leaves_the_estimator():
    pytest.importorskip("optuna")
    model = TransformerForecaster(**SMALL).fit(DATA)
    before = model.predict()["yhat"].to_numpy()
    attributes = dict(vars(model))
    with pytest.raises(ValueError, match=r"every trial failed \(2 of them\); the first with: series 's0' has 60 "
                                         r"observations; cross_validate needs at least 508") as info:
        tsrsa.tune(model, DATA, n_trials=2, search_space={"input_size": [500]}, random_state=0)
    assert isinstance(info.value.__cause__, ValueError)
    assert vars(model).keys() == attributes.keys()
    assert all(vars(model)[name] is value for name, value in attributes.items())
    assert np.array_equal(model.predict()["yhat"].to_numpy(), before)


def test_a_search_with_some_failed_trials_returns_the_best_completed_one():
    pytest.importorskip("optuna")
    result = tsrsa.tune(SeasonalNaiveForecaster(h=4), DATA, n_trials=6, random_state=0, refit=False,
                        search_space={"season_length": [6, 500]})
    states = [t.state.name for t in result.study.trials]
    assert "FAIL" in states and "COMPLETE" in states and result.best_params == {"season_length": 6}


def test_kept_history_names_ids_with_the_models_id_column():
    y = make_panel(n_series=1, length=60).rename(columns={"unique_id": "store"})
    model = TransformerForecaster(h=4, input_size=8, d_model=8, n_heads=2, max_epochs=1, stream=True, id_col="store",
                                  attention_options={"cache_size": 3}, random_state=0).fit(y)
    kept = model.kept_history()
    assert list(kept.columns[:2]) == ["store", "layer"] and set(kept["store"]) == {"s0"}
