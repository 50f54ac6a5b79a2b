"""The forecasters a user fits: one file per model.

Each file is a thin class that names its network (or statistical model) and its defaults; what they
share (validation, windows, training, prediction frames, saving) is the estimator's machinery in
:mod:`tsrsa.estimator`.
"""
from tsrsa.estimator.base import BaseForecaster
from tsrsa.estimator.neural import NeuralForecaster
from tsrsa.estimator.persistence import load_model
from tsrsa.estimator.statistical import StatisticalForecaster
from tsrsa.forecasters.arima import ARIMAForecaster
from tsrsa.forecasters.auto import AutoForecaster
from tsrsa.forecasters.dlinear import DLinearForecaster
from tsrsa.forecasters.ets import ETSForecaster
from tsrsa.forecasters.lstm import LSTMForecaster
from tsrsa.forecasters.multi import MultiForecaster
from tsrsa.forecasters.naive import SeasonalNaiveForecaster
from tsrsa.forecasters.registry import FORECASTERS  # the classes tsrsa.load may instantiate
from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.theta import ThetaForecaster
from tsrsa.forecasters.transformer import TransformerForecaster

#: the sets of models ``tsrsa.load`` may instantiate besides (each saved as a folder per model)
MODEL_SETS = (MultiForecaster, AutoForecaster)

__all__ = [
    "ARIMAForecaster", "AutoForecaster", "ETSForecaster", "FORECASTERS", "MODEL_SETS", "BaseForecaster",
    "DLinearForecaster", "LSTMForecaster", "MultiForecaster", "NeuralForecaster", "RSAForecaster",
    "SeasonalNaiveForecaster", "StatisticalForecaster", "ThetaForecaster", "TransformerForecaster", "load",
]


def load(path, *, device: str = "cpu"):
    """Load a forecaster saved with ``save``; its network goes to ``device`` (CPU by default).

    Only the classes of :data:`FORECASTERS` and :data:`MODEL_SETS` are instantiated (the class named in
    config.json is looked up among them by name; a set's members among the former). The folder's checks
    are :func:`tsrsa.estimator.persistence.load_model`'s.

    Raises
    ------
    ValueError
        When ``device`` is not available here (before any file is read); when the directory is not a
        saved tsrsa model, a file is missing, unreadable, corrupted, modified after saving or left
        from another model, the parameters disagree with the saved network or state, or the class
        is not a tsrsa forecaster. The message names the file.
    """
    return load_model(path, FORECASTERS + MODEL_SETS, device=device)
