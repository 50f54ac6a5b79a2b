"""The old addresses of the modules that left ``tsrsa/forecasters/`` in 0.15, kept until tsrsa 0.16.

``tsrsa/forecasters/`` holds one file per model now. The estimator's machinery moved to
:mod:`tsrsa.estimator`, the statistical models' engines to :mod:`tsrsa.statistical` and the
statistical start's algebra to :mod:`tsrsa.start`. Each old module is a three-line file that calls
:func:`old_address`: a name read from it (``from tsrsa.forecasters.plan import FitPlan``) is the same
object as at its new address, with a ``DeprecationWarning`` that names the new address. Importing an
old module warns of nothing by itself, so that nothing tsrsa imports on its own warns.
"""
from __future__ import annotations

import importlib
import warnings

#: the version that removes the old addresses
REMOVED_IN = "0.16"

#: old module under ``tsrsa.forecasters`` -> the module that holds its names now
MOVED = {
    "base": "tsrsa.estimator.base",
    "common_params": "tsrsa.estimator.common_params",
    "conformal": "tsrsa.estimator.conformal",
    "conveniences": "tsrsa.estimator.conveniences",
    "crossval": "tsrsa.estimator.crossval",
    "ensembles": "tsrsa.estimator.ensembles",
    "fine_tuning": "tsrsa.estimator.fine_tuning",
    "model_folder": "tsrsa.estimator.model_folder",
    "neural": "tsrsa.estimator.neural",
    "outputs": "tsrsa.estimator.outputs",
    "params": "tsrsa.estimator.params",
    "persistence": "tsrsa.estimator.persistence",
    "plan": "tsrsa.estimator.plan",
    "plan_ahead": "tsrsa.estimator.plan_ahead",
    "plotting": "tsrsa.estimator.plotting",
    "saved_checks": "tsrsa.estimator.saved_checks",
    "sharded": "tsrsa.estimator.sharded",
    "spaces": "tsrsa.estimator.spaces",
    "started": "tsrsa.estimator.started",
    "statistical": "tsrsa.estimator.statistical",
    "statistical_state": "tsrsa.estimator.statistical_state",
    "stream_runs": "tsrsa.estimator.stream_runs",
    "stream_state": "tsrsa.estimator.stream_state",
    "window_state": "tsrsa.estimator.window_state",
    "estimator": "tsrsa.estimator.protocol",
    "ets_model": "tsrsa.statistical.ets_model",
    "arima_model": "tsrsa.statistical.arima_model",
    "theta_model": "tsrsa.statistical.theta_model",
    "series_fit": "tsrsa.statistical.series_fit",
    "start": "tsrsa.start.fit",
    "start_arima": "tsrsa.start.arima",
    "start_ets": "tsrsa.start.ets",
    "start_maps": "tsrsa.start.maps",
    "differencing": "tsrsa.start.differencing",
    "batched_least_squares": "tsrsa.start.batched_least_squares",
    "power_series": "tsrsa.start.power_series",
}

#: old module -> {name: module} for the names that did not move with the rest of their module
MOVED_NAMES = {
    "persistence": {"load": "tsrsa.forecasters", "encode_index": "tsrsa.data.index_encoding",
                    "decode_index": "tsrsa.data.index_encoding", "encode_times": "tsrsa.data.index_encoding",
                    "decode_times": "tsrsa.data.index_encoding"},
}


def new_address(old_module: str, name: str) -> str:
    """The module that holds ``name`` of the old module ``tsrsa.forecasters.<old_module>`` now."""
    return MOVED_NAMES.get(old_module, {}).get(name, MOVED[old_module])


def old_address(module_name: str):
    """The module-level ``__getattr__`` and ``__dir__`` of the old module ``module_name``."""
    old = module_name.rpartition(".")[2]

    def __getattr__(name: str):
        if name.startswith("__") and name != "__all__":  # the import system's probes: no warning, no import
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        home = new_address(old, name)
        try:
            value = getattr(importlib.import_module(home), name)
        except AttributeError:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
        warnings.warn(f"{module_name}.{name} is deprecated: use {home}.{name} ({module_name} moved to "
                      f"{MOVED[old]}; the old address goes in tsrsa {REMOVED_IN})", DeprecationWarning, stacklevel=2)
        return value

    def __dir__():
        module = importlib.import_module(MOVED[old])
        return sorted({n for n in dir(module) if not n.startswith("_")} | set(MOVED_NAMES.get(old, {})))

    return __getattr__, __dir__
