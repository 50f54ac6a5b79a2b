"""Training layer: one lean loop with device, precision, early stopping, seeding and progress."""
from tsrsa.training.batches import CarriedLoader, WindowLoader
from tsrsa.training.config import LR_SCHEDULES, TrainingConfig
from tsrsa.training.devices import (
    ACCELERATORS, PRECISIONS, autocast, check_precision, resolve_device, resolve_devices, torch_threads,
)
from tsrsa.training.distributed import STRATEGIES, launched_by_torchrun
from tsrsa.training.loop import TrainingResult, evaluate_loss, train_network
from tsrsa.training.ranks import SINGLE, Rank
from tsrsa.training.seeding import resolve_seed, seeded

__all__ = [
    "ACCELERATORS", "LR_SCHEDULES", "PRECISIONS", "SINGLE", "STRATEGIES", "Rank", "TrainingConfig",
    "CarriedLoader", "TrainingResult", "WindowLoader", "autocast", "check_precision", "evaluate_loss", "launched_by_torchrun",
    "resolve_device", "resolve_devices", "resolve_seed", "seeded", "torch_threads", "train_network",
]
