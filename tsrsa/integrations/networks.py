"""The network a tsrsa forecaster would train, for the integrations to wrap.

Both integrations hold the very ``tsrsa.nn.ForecastingTransformer`` that ``TransformerForecaster``
(any attention kind, by name) and ``RSAForecaster`` train, built and validated by those classes
(same argument names, same checks and messages), so that there is one network and one set of
rules. They read fixed windows, so the streaming configuration (``stream``) is not offered.
"""
from __future__ import annotations

import dataclasses

from tsrsa.estimator.params import check_int
from tsrsa.forecasters.rem_options import REM
from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.transformer import TransformerForecaster
from tsrsa.nn.backbone import ForecastingTransformer

#: architecture arguments of each forecaster, as its constructor names them
_BACKBONE = ("d_model", "n_heads", "n_layers", "d_ff", "dropout", "causal", "revin", "patch_len")
ARCHITECTURE = {
    TransformerForecaster: _BACKBONE + ("attention", "attention_options"),
    RSAForecaster: _BACKBONE + ("rem", "attention_options"),
}


def build_network(forecaster: type, *, h: int, input_size: int, n_outputs: int = 1, covariates: dict | None = None,
                  **architecture) -> ForecastingTransformer:
    """The network that ``forecaster`` builds with these architecture arguments.

    Parameters
    ----------
    forecaster : {TransformerForecaster, RSAForecaster}
        The estimator whose network, defaults and checks to use; TransformerForecaster takes any
        attention kind through ``attention`` and ``attention_options``.
    h, input_size : int
        Forecast horizon and look-back window, in steps.
    n_outputs : int, default 1
        Values per horizon step (1 for a point forecast, Q for Q quantiles).
    covariates : dict, optional
        The network's covariate layout (``tsrsa.nn.covariates``: ``n_past``, ``n_future``,
        ``n_static``, ``cardinalities``); None: the target alone.
    **architecture
        The forecaster's architecture arguments (``ARCHITECTURE[forecaster]``); the rest keep
        its defaults. RSA's ``rem`` (a ``tsrsa.REM`` or a dict of its options) starts the heads
        from ``init="paper"`` unless it names a dict of values: the data initialisation needs a
        tsrsa fit.

    Returns
    -------
    ForecastingTransformer
        Freshly initialised; RSA heads start from the REM's ``init``.
    """
    if forecaster not in ARCHITECTURE:
        raise TypeError(f"forecaster must be one of {[cls.__name__ for cls in ARCHITECTURE]}, got {forecaster!r}")
    allowed = ARCHITECTURE[forecaster]
    unknown = sorted(set(architecture) - set(allowed))
    if unknown:
        raise TypeError(f"unknown architecture argument(s) {unknown}; {forecaster.__name__} takes {list(allowed)}")
    check_int("h", h)
    check_int("input_size", input_size)
    check_int("n_outputs", n_outputs)
    if forecaster is RSAForecaster:
        given = architecture.get("rem")
        rem = REM.coerce(given, "rem")
        named = isinstance(given, REM) or (isinstance(given, dict) and "init" in given)
        if not named:
            rem = dataclasses.replace(rem, init="paper")
        elif isinstance(rem.init, str) and rem.init in ("data", "start"):
            raise ValueError(f"rem's init={rem.init!r} estimates the REM heads during a tsrsa fit; here use 'paper' "
                             f"or a dict of values, e.g. rem={{'init': {{'lambda': 0.9, 'theta': 0.26}}}}")
        architecture = {**architecture, "rem": rem}
    estimator = forecaster(h=h, input_size=input_size, **architecture)
    estimator.check_params()
    config = dataclasses.replace(estimator.network_config(), n_outputs=n_outputs, covariates=dict(covariates or {}))
    network = estimator.build_network(config)
    if forecaster is RSAForecaster:
        values = estimator.rem_init_values()
        for block in network.blocks:
            block.attn.set_rem_parameters(lam=values.get("lambda"), gamma=values.get("gamma"),
                                          theta=values.get("theta"), mu=values.get("gate"))
    return network
