"""Settings of one training run."""
from __future__ import annotations

from dataclasses import dataclass

from tsrsa.training.checkpoint import Checkpoint

LR_SCHEDULES = ("constant", "cosine", "onecycle", "halving")


@dataclass
class TrainingConfig:
    max_epochs: int = 20  # passes over the training windows
    batch_size: int = 64  # windows per optimisation step
    batches_per_epoch: int | None = None  # steps per epoch, each from a fresh shuffle; None: every window
    learning_rate: float = 1e-3  # AdamW step size (peak of a schedule)
    weight_decay: float = 1e-4  # AdamW decoupled weight decay
    group_options: dict | None = None  # optimiser options of the network's named parameter groups,
    # e.g. {"recurrence": {"lr": 1e-2, "weight_decay": 0.0}}; None: every weight alike
    lr_schedule: str | None = None  # None/"constant", "cosine" (to 0 over all steps), "onecycle",
    # "halving" (half the rate after every epoch)
    early_stopping_patience: int | None = None  # epochs without validation improvement; None: off
    gradient_clip: float | None = 1.0  # max global gradient norm; None: no clipping
    precision: str = "32"  # "32", "bf16-mixed" or "16-mixed"
    compile: bool | str = False  # train through torch.compile: True (its default backend) or a backend's name
    verbose: int = 0  # 0: silent; 1: one progress bar
    description: str = "training"  # label of the progress bar
    checkpoint: object | None = None  # a tsrsa.training.checkpoint.Checkpoint: resume from it, save every epoch
    validate_start: bool = False  # score the starting weights on validation as epoch 0: kept unless an epoch beats them
    start_margin: float = 0.0  # with validate_start: by how many standard errors (HAC) an epoch must beat them

    def __post_init__(self) -> None:
        if isinstance(self.checkpoint, Checkpoint):  # its file is checked against this run's budget and options
            self.checkpoint = self.checkpoint.for_run(self)
