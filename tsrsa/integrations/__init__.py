"""tsrsa's networks inside other libraries' model contracts.

- :mod:`tsrsa.integrations.pytorch_forecasting`: ``RSATransformer`` and ``VanillaTransformer``,
  pytorch-forecasting ``BaseModel`` subclasses (``from_dataset``, ``predict``,
  ``plot_prediction``, ``load_from_checkpoint``); needs ``pip install 'tsrsa[ptf]'``.
- :mod:`tsrsa.integrations.tslib`: ``Model(configs)`` and ``VanillaModel(configs)`` in
  Time-Series-Library's model contract (torch only).
- :mod:`tsrsa.integrations.sktime`: ``TsrsaForecaster(estimator)``, any tsrsa forecaster as an
  sktime forecaster (``fit(y, X, fh)``, ``predict_interval``, ``update``, panels); needs
  ``pip install 'tsrsa[sktime]'``.
- :mod:`tsrsa.integrations.dask`: a saved forecaster's ``predict`` and backtests mapped over
  partitions of series on Dask workers (``predict_partitions``, ``backtest_partitions``,
  ``cross_validate_partitions``); needs ``pip install 'tsrsa[dask]'``.
- :mod:`tsrsa.integrations.mlflow`: ``MLflowLogger``, a trainer's ``callbacks=[...]`` entry that logs every
  epoch's losses, learning rate and time to an MLflow run; needs ``pip install 'tsrsa[mlflow]'``.

Nothing is imported until a submodule is asked for, so ``import tsrsa.integrations`` stays light.
"""
from __future__ import annotations

import importlib

_SUBMODULES = ("dask", "mlflow", "networks", "pytorch_forecasting", "sktime", "sktime_frames", "tslib")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"tsrsa.integrations.{name}")
    raise AttributeError(f"module 'tsrsa.integrations' has no attribute {name!r}")
