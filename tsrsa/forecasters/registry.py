"""The forecaster classes ``tsrsa.load`` may instantiate, in one place that the sets of models read too."""
from tsrsa.forecasters.arima import ARIMAForecaster
from tsrsa.forecasters.dlinear import DLinearForecaster
from tsrsa.forecasters.ets import ETSForecaster
from tsrsa.forecasters.lstm import LSTMForecaster
from tsrsa.forecasters.naive import SeasonalNaiveForecaster
from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.theta import ThetaForecaster
from tsrsa.forecasters.transformer import TransformerForecaster

#: the classes ``tsrsa.load`` may instantiate (nothing else is ever built from a file)
FORECASTERS = (SeasonalNaiveForecaster, LSTMForecaster, TransformerForecaster, DLinearForecaster, RSAForecaster,
               ETSForecaster, ARIMAForecaster, ThetaForecaster)
