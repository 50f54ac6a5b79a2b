"""sklearn-style forecasters: validate -> window -> train -> predict -> tidy frame."""
from tsrsa.forecasters.base import BaseForecaster
from tsrsa.forecasters.dlinear import DLinearForecaster
from tsrsa.forecasters.lstm import LSTMForecaster
from tsrsa.forecasters.naive import SeasonalNaiveForecaster
from tsrsa.forecasters.neural import NeuralForecaster
from tsrsa.forecasters.persistence import load
from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.transformer import TransformerForecaster

#: the classes ``tsrsa.load`` may instantiate (nothing else is ever built from a file)
FORECASTERS = (SeasonalNaiveForecaster, LSTMForecaster, TransformerForecaster, DLinearForecaster, RSAForecaster)

__all__ = [
    "FORECASTERS", "BaseForecaster", "DLinearForecaster", "LSTMForecaster", "NeuralForecaster",
    "RSAForecaster", "SeasonalNaiveForecaster", "TransformerForecaster", "load",
]
