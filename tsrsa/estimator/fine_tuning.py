"""Fine-tuning a fitted neural forecaster: more training from its weights, on new data.

``NeuralForecaster.fine_tune(df, max_epochs=10, learning_rate=None)`` trains a copy of the model
(same parameters, except ``max_epochs`` and ``learning_rate`` for this call) starting from the fitted
network's weights, then swaps the copy's fitted state in: all or nothing, as ``fit_panel`` (a call that
raises leaves the model as it was). What it keeps and what it refits:

- the network: its configuration as fitted (the architecture, the REM dilations and the head's reach
  chosen at fit from the data) and its weights, the starting point; no data initialisation runs;
- the scaling statistics of every series the model knows, so that the continuation of a series is
  read in the units it was trained in (a level far outside them is refused as at ``update``); a series
  new to the model gets its own, from its history in ``df``;
- the covariate encoding (categories, numeric scaling): the network's inputs keep their meaning;
- the constructor parameters: ``get_params()`` is the same after the call.

Refitted from ``df``: the state ``predict`` reads (``memory_``: the series of ``df``, as after
``fit(df)``), ``fit_history_`` (the fine-tuning's epochs), the training budget actually used
(``max_epochs_`` ...), the data ``fitted()`` reads and, for a model with ``conformal_windows``, the
calibration (a copy fine-tuned without the held-out horizons scores them, as ``fit`` does).
"""
from __future__ import annotations

import copy

import numpy as np

from tsrsa.estimator.params import check_float
from tsrsa.training.budget import check_budget


def kept_statistics(source, panel, loc: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``loc``/``scale`` (S,) of ``panel``'s series with those of the ids the fitted ``source`` knows
    replaced by its own (new arrays)."""
    known = source.memory_.ids.get_indexer(panel.ids)  # (S,) row in the fitted state, -1 if new
    seen = known >= 0
    loc, scale = loc.copy(), scale.copy()
    loc[seen], scale[seen] = source.memory_.loc[known[seen]], source.memory_.scale[known[seen]]
    return loc, scale


def fitted_config(source):
    """The fitted network's configuration (a copy): the network a fine-tune trains further."""
    return copy.deepcopy(source.network_.config)


def fine_tune(model, df, *, max_epochs, learning_rate):
    """See :meth:`tsrsa.estimator.neural.NeuralForecaster.fine_tune`."""
    if not hasattr(model, "network_"):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"fine_tune continues training from fitted weights, and this {type(model).__name__} "
                             f"is not fitted yet: call fit(df) first (or load a saved model)")
    check_budget("max_epochs", max_epochs, allow_none=False)
    check_float("learning_rate", learning_rate, strict=True, allow_none=True)
    tuned = model.clone().set_params(
        max_epochs=max_epochs, learning_rate=model.learning_rate if learning_rate is None else learning_rate)
    tuned.check_params()
    panel = model.to_panel(df, fitted=True)
    weights = {name: tensor.detach().cpu().clone() for name, tensor in model.network_.state_dict().items()}
    tuned.fit_panel(panel, warm_start=(weights, ()), fitted_from=model)
    vars(model).update({name: value for name, value in vars(tuned).items()
                        if name.endswith("_") and not name.startswith("_")})
    return model

