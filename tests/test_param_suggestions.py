"""A misspelt parameter gets names of the same estimator and of the same kind: a size is never offered a
column name (``DLinearForecaster(d_model=16)`` once got ``id_col``), a column name gets column names."""
from __future__ import annotations

import pytest

from tsrsa import DLinearForecaster, RSAForecaster, SeasonalNaiveForecaster
from tsrsa.estimator.params import suggest_names


def hint(cls, name, value) -> str:
    return suggest_names(name, cls.param_names(), value=value, defaults=cls.param_defaults())


@pytest.mark.parametrize("cls, name, value, expected", [
    (RSAForecaster, "d_modle", 16, "did you mean 'd_model'?"),
    (RSAForecaster, "n_layer", 2, "did you mean 'n_layers'"),
    (DLinearForecaster, "time_colum", "date", "did you mean 'time_col'"),
    (DLinearForecaster, "target", "sales", "did you mean 'target_col'"),
    (DLinearForecaster, "lr", 0.01, "did you mean 'learning_rate'?"),
    (DLinearForecaster, "epochs", 5, "did you mean 'max_epochs'?"),
    (SeasonalNaiveForecaster, "season", 12, "did you mean 'season_length'?"),
])
def test_a_close_name_of_the_same_kind_is_suggested(cls, name, value, expected):
    assert hint(cls, name, value).startswith(expected)


def test_no_name_of_another_kind_or_estimator_is_suggested():
    d_model = hint(DLinearForecaster, "d_model", 16)  # a transformer's size: DLinear has none
    assert d_model.startswith("valid parameters: ") and "did you mean" not in d_model
    assert "id_col" not in hint(RSAForecaster, "d_model_", 16).split("?")[0]
    assert hint(SeasonalNaiveForecaster, "lr", 0.01).startswith("valid parameters: ")  # no learning rate to offer
