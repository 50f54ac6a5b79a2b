"""Default search spaces of ``tsrsa.tune``: each forecaster class's ``search_space(trial)``."""
from __future__ import annotations


def training_space(trial) -> dict:
    """Optimiser settings every neural forecaster shares."""
    return {
        "learning_rate": trial.suggest_float("learning_rate", 1e-4, 1e-2, log=True),
        "weight_decay": trial.suggest_float("weight_decay", 1e-6, 1e-2, log=True),
        "batch_size": trial.suggest_categorical("batch_size", [32, 64, 128]),
    }


def sequence_space(trial) -> dict:
    """Training settings plus the regularisation of the token/step models."""
    return {**training_space(trial), "dropout": trial.suggest_float("dropout", 0.0, 0.3)}
