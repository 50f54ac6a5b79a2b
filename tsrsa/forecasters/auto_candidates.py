"""AutoForecaster's candidates: the default set, and the candidates a saved one names, rebuilt."""
from __future__ import annotations

import numpy as np


def default_candidates(auto, columns: dict) -> list[tuple[str, object]]:
    """The default candidates of ``auto`` (its class docstring), configured with its arguments."""
    from tsrsa.forecasters.arima import ARIMAForecaster
    from tsrsa.forecasters.dlinear import DLinearForecaster
    from tsrsa.forecasters.ets import ETSForecaster
    from tsrsa.forecasters.naive import SeasonalNaiveForecaster
    from tsrsa.forecasters.rsa import RSAForecaster
    from tsrsa.forecasters.theta import ThetaForecaster
    from tsrsa.forecasters.transformer import TransformerForecaster

    shared = {**columns, "freq": auto.freq, "fill": auto.fill}
    out = []
    for name, cls in (("SeasonalNaive", SeasonalNaiveForecaster), ("ETS", ETSForecaster), ("ARIMA", ARIMAForecaster),
                      ("Theta", ThetaForecaster), ("RSA", RSAForecaster), ("Transformer", TransformerForecaster),
                      ("DLinear", DLinearForecaster)):
        taken = set(cls.param_names())
        own = {"season_length": auto.season_length, "random_state": auto.random_state}
        if auto.n_jobs is not None:  # else each class's own default
            own["n_jobs"] = auto.n_jobs
        params = {k: v for k, v in {**shared, **own}.items() if k in taken}
        out.append((name, cls(auto.h, **params)))
    return out


def held_look_back(model, panel, block: int):
    """``model``, or a copy at the look-back its default rule gives the panel's median series where the shortest
    series takes that away.

    A network left to the default look-back (``input_size=None``) sets it by the panel's shortest series, so
    that it keeps a few training windows (:func:`tsrsa.estimator.plan.default_input_size`): alone, a short
    series is fitted rather than refused. Among candidates it need not be: the network is validated and
    refitted at the look-back the rule gives the median series with the validation ``block`` taken off
    (``input_size`` set), and the series too short for it (at most half) are left to the other candidates;
    where that is the shortest series' look-back too, ``model`` itself."""
    from tsrsa.estimator.neural import NeuralForecaster

    if not isinstance(model, NeuralForecaster) or model.input_size is not None:
        return model
    taken = int(block) + int(model.val_size)  # the steps a fit on the series before the block holds out
    median = model.input_size_for(int(np.median(panel.lengths)) - taken, panel.freq)
    if median == model.input_size_for(int(panel.lengths.min()) - taken, panel.freq):
        return model
    return model.clone().set_params(input_size=median)


def rebuilt_candidates(specs: list) -> list[tuple[str, object]]:
    """The candidates ``candidate_specs`` wrote, each built from tsrsa's own classes only (a whitelist)."""
    from tsrsa.forecasters.registry import FORECASTERS

    classes = {cls.__name__: cls for cls in FORECASTERS}
    out = []
    for spec in specs:
        cls = classes.get(spec["class"])
        if cls is None:
            raise ValueError(f"candidate class {spec['class']!r} is not a tsrsa forecaster")
        out.append((str(spec["name"]), cls(**cls.upgrade_params(dict(spec["params"])))))
    return out
