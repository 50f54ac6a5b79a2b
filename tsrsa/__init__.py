"""tsrsa: time-series forecasting with transformers that carry recurrence.

The public names below load on first use, so ``import tsrsa`` stays cheap: torch, the
forecasters and the optional dependencies are imported only when something needs them.
``dir(tsrsa)`` lists exactly the public names (``__all__``).
"""
import importlib as _importlib
import logging as _logging

from tsrsa._version import __version__

_logging.getLogger("tsrsa").addHandler(_logging.NullHandler())

# public name -> module that defines it
_LAZY = {
    "SeasonalNaiveForecaster": "tsrsa.forecasters.naive",
    "LSTMForecaster": "tsrsa.forecasters.lstm",
    "TransformerForecaster": "tsrsa.forecasters.transformer",
    "RSAForecaster": "tsrsa.forecasters.rsa",
    "DLinearForecaster": "tsrsa.forecasters.dlinear",
    "ETSForecaster": "tsrsa.forecasters.ets",
    "ARIMAForecaster": "tsrsa.forecasters.arima",
    "ThetaForecaster": "tsrsa.forecasters.theta",
    "MultiForecaster": "tsrsa.forecasters.multi",
    "AutoForecaster": "tsrsa.forecasters.auto",
    "load": "tsrsa.forecasters",
    "load_onnx": "tsrsa.serving",
    "evaluate": "tsrsa.metrics",
    "tune": "tsrsa.tuning",
    "TuneResult": "tsrsa.tuning",
    "Trainer": "tsrsa.estimator.trainer",
    "Start": "tsrsa.estimator.groups",
    "Covariates": "tsrsa.estimator.groups",
    "REM": "tsrsa.forecasters.rem_options",
    "reconcile": "tsrsa.hierarchy",
    "aggregate": "tsrsa.hierarchy",
}
_SUBMODULES = {"convert", "data", "datasets", "forecasters", "init", "integrations", "metrics", "nn", "training",
               "tuning"}

__all__ = ["__version__", *sorted(_LAZY), *sorted(_SUBMODULES)]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f"tsrsa.{name}")
    else:
        raise AttributeError(f"module 'tsrsa' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    """The public names only: not the helpers of this module, nor the sub-packages imported along the way."""
    return sorted(__all__)
