"""sklearn-style forecasters: validate -> window -> train -> predict -> tidy frame."""
from tsrsa.forecasters.arima import ARIMAForecaster
from tsrsa.forecasters.base import BaseForecaster
from tsrsa.forecasters.dlinear import DLinearForecaster
from tsrsa.forecasters.ets import ETSForecaster
from tsrsa.forecasters.lstm import LSTMForecaster
from tsrsa.forecasters.naive import SeasonalNaiveForecaster
from tsrsa.forecasters.neural import NeuralForecaster
from tsrsa.forecasters.persistence import load
from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.statistical import StatisticalForecaster
from tsrsa.forecasters.theta import ThetaForecaster
from tsrsa.forecasters.transformer import TransformerForecaster

#: the classes ``tsrsa.load`` may instantiate (nothing else is ever built from a file)
FORECASTERS = (SeasonalNaiveForecaster, LSTMForecaster, TransformerForecaster, DLinearForecaster, RSAForecaster,
               ETSForecaster, ARIMAForecaster, ThetaForecaster)

__all__ = [
    "ARIMAForecaster", "ETSForecaster", "FORECASTERS", "BaseForecaster", "DLinearForecaster", "LSTMForecaster",
    "NeuralForecaster", "RSAForecaster", "SeasonalNaiveForecaster", "StatisticalForecaster", "ThetaForecaster",
    "TransformerForecaster", "load",
]
