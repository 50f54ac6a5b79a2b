"""sklearn-style forecasters: validate -> window -> train -> predict -> tidy frame."""
from tsrsa.forecasters.base import BaseForecaster
from tsrsa.forecasters.lstm import LSTMForecaster
from tsrsa.forecasters.naive import SeasonalNaiveForecaster
from tsrsa.forecasters.neural import NeuralForecaster
from tsrsa.forecasters.persistence import load
from tsrsa.forecasters.transformer import TransformerForecaster

#: the classes ``tsrsa.load`` may instantiate (nothing else is ever built from a file)
FORECASTERS = (SeasonalNaiveForecaster, LSTMForecaster, TransformerForecaster)

__all__ = [
    "FORECASTERS", "BaseForecaster", "LSTMForecaster", "NeuralForecaster", "SeasonalNaiveForecaster",
    "TransformerForecaster", "load",
]
