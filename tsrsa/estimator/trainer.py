"""How a neural forecaster trains, apart from what it builds: :class:`Trainer`, one argument.

What to build (the architecture, the loss, the budget, the data's columns) is the estimator's own
arguments; where and how the training runs (device, processes, precision, compilation, threads,
progress, checkpoints, callbacks, the batches an epoch draws, early stopping, the batches of
inference) is one value, ``trainer=``, as darts and neuralforecast pass their ``trainer_kwargs``,
Lightning its ``Trainer`` (``limit_train_batches``, early stopping) and Hugging Face its
``TrainingArguments``::

    RSAForecaster(h=24, trainer=tsrsa.Trainer(accelerator="gpu", precision="bf16-mixed"))
    RSAForecaster(h=24, trainer={"num_threads": 2})        # a dict of the same options

``trainer=None`` (the default) is ``Trainer()``. A dict is read as the options it names (an unknown
key is refused with the closest names); the estimator keeps the value as given (sklearn's rule) and
reads it through :func:`as_trainer`. The mechanism is every option group's
(:mod:`tsrsa.estimator.option_groups`).

The first nine options were the estimators' own arguments before tsrsa 0.15 (``num_threads=2``),
``batches_per_epoch``, ``early_stopping_patience`` and ``inference_batch_size`` before 0.16: a
constructor or ``set_params`` call that uses that spelling still works until 0.19, with a
``DeprecationWarning`` naming the new one; a model folder saved with it loads without a warning and the
command line's ``-p num_threads=2`` maps onto the trainer. :func:`flat_params` writes a parameter dict the old
way, with every group's options beside the others, for records that compare runs across versions
(checkpoint fingerprints, benchmark rows).
"""
from __future__ import annotations

from dataclasses import dataclass

from tsrsa.estimator.option_groups import OptionGroup, flat_options
from tsrsa.estimator.params import check_int
from tsrsa.training.budget import check_budget
from tsrsa.training.checkpoint import check_checkpointing
from tsrsa.training.devices import check_accelerator, check_compile, check_precision
from tsrsa.training.distributed import check_strategy

@dataclass(frozen=True, repr=False)
class Trainer(OptionGroup):
    """Where and how a neural forecaster trains: ``trainer=`` of every neural forecaster.

    Each option is checked when the Trainer is made (``ValueError`` or ``TypeError`` naming it and
    the fix); it changes where and how fast a fit runs, never what a fit on the CPU in float32
    computes, except ``precision`` and ``compile``, which change the arithmetic.

    Parameters
    ----------
    accelerator : {"auto", "cpu", "gpu", "cuda", "mps"}, default "auto"
        "auto" uses CUDA when present.
    devices : int or list, optional
        Device count or indices. More than one trains data-parallel (DDP): ``devices=k`` runs
        k worker processes on this machine (k CPU processes, or CUDA devices 0..k-1 or the
        listed ones); each takes its part of every batch of ``batch_size`` windows.
    strategy : {"auto", "single_device", "ddp", "ddp_spawn"}, default "auto"
        How a fit runs. "auto": in this process on one device, spawned workers when
        ``devices`` asks for more ("ddp_spawn"), or, in a script launched by ``torchrun``
        (several ranks, one or more hosts), as this process's rank ("ddp"). Named
        explicitly, "ddp_spawn" spawns and "ddp" joins also for a world of one device, through
        the same DDP code as several. A script that spawns needs the
        ``if __name__ == "__main__":`` guard. Same seed and world size, same model; see
        ``examples/data_parallel.py``.
    precision : {"32", "bf16-mixed", "16-mixed"}, default "32"
        The forward pass's precision in training and prediction (mixed: under ``torch.autocast``,
        float32 weights).
    compile : bool or str, default False
        Train through ``torch.compile`` (True: its default backend; a string: that backend, such as
        "eager" or "aot_eager"). The first steps pay the compilation; predictions run the plain
        network. What it buys on a GPU: ``benchmarks/RESULTS.md``, section "On a GPU".
    num_threads : int, optional
        torch CPU threads during fit and predict (restored afterwards). None: one thread on the
        CPU (the fit plan's rule, :mod:`tsrsa.estimator.plan`), torch's own count on an accelerator.
    callbacks : list of callables, optional
        Each called after every epoch with its record (a dict: ``epoch``, ``train_loss``,
        ``val_loss``, ``learning_rate``, ``seconds``, and ``member`` when ``ensemble_size`` trains
        several networks, one after another): the hook for experiment trackers (MLflow,
        Weights & Biases, TensorBoard: log the record; ``tsrsa.integrations.mlflow.MLflowLogger``).
        An exception raised there ends the fit, leaving the estimator as it was (and, with
        ``checkpoint_dir``, the epoch saved). With ``devices > 1`` the fit runs in spawned workers,
        and the epochs' records are replayed to the callbacks when training ends. A saved model
        keeps none.
    checkpoint_dir : str or path, optional
        Keep the training run's state in this folder after every epoch
        (``training_checkpoint.pt``), so that a fit that is interrupted or killed resumes, when
        the same model is fitted on the same data again, after its last finished epoch, to the
        weights an uninterrupted fit would reach (``tsrsa.training.checkpoint``). The file goes
        when the fit ends; one of another fit (other parameters or data) is refused. One process
        only (not with ``devices > 1``); nothing is written without it.
    verbose : int, default 0
        0 is silent; 1 prints the fit plan and shows one progress line per fit (on standard error):
        optimiser steps done of the budget, elapsed and estimated time left, the windows an epoch
        reads, the epoch and the latest training and validation losses.
    batches_per_epoch : int, "auto" or None, default "auto"
        Optimisation steps per epoch: each epoch trains on this many batches drawn afresh from
        the shuffled training windows, as Lightning's ``limit_train_batches`` does (validation
        still reads every validation window). None: every training window once per epoch. "auto":
        the rule of ``max_epochs="auto"`` (every window when ``max_epochs`` is a number). A number
        is not allowed with training that carries the state across windows.
    early_stopping_patience : int, "auto" or None, default "auto"
        Epochs without validation improvement before stopping; "auto": a fifth of the epochs,
        at least 3; None: off. Off without validation data (``val_size=0``). With validation the
        best epoch's weights are kept. With ``lr_schedule="onecycle"`` the warm-up epochs (the first
        30 %, while the rate rises) spend no patience.
    inference_batch_size : int, default 1024
        Windows per forward pass in validation and prediction (bounds their memory).

    Examples
    --------
    >>> from tsrsa import Trainer
    >>> Trainer(num_threads=2)
    Trainer(num_threads=2)
    >>> Trainer(num_threads=0)
    Traceback (most recent call last):
    ...
    ValueError: Trainer: num_threads=0 must be >= 1
    """

    accelerator: str = "auto"  # where: "auto" (CUDA when present), "cpu", "gpu"/"cuda", "mps"
    devices: int | list | None = None  # how many (or which) devices; > 1 trains data-parallel
    strategy: str = "auto"  # one process, spawned workers ("ddp_spawn") or a torchrun rank ("ddp")
    precision: str = "32"  # "32", "bf16-mixed" or "16-mixed"
    compile: bool | str = False  # torch.compile in training (a string: its backend)
    num_threads: int | None = None  # torch CPU threads in fit and predict (None: the plan's rule)
    callbacks: list | None = None  # called with every epoch's record
    checkpoint_dir: str | None = None  # resume an interrupted fit from this folder
    verbose: int = 0  # 0 silent; 1 the plan and one progress line
    batches_per_epoch: int | str | None = "auto"  # batches an epoch draws (None: every window; "auto": the rule)
    early_stopping_patience: int | str | None = "auto"  # epochs without improvement (None: off; "auto": a fifth)
    inference_batch_size: int = 1024  # windows per forward pass in validation and prediction

    def check(self) -> None:
        check_accelerator(self.accelerator, self.devices)
        check_strategy(self.strategy)
        check_precision(self.precision)
        check_compile(self.compile)
        check_int("num_threads", self.num_threads, allow_none=True)
        check_checkpointing(self.checkpoint_dir, self.callbacks, self.devices)
        check_int("verbose", self.verbose, minimum=0)
        check_budget("batches_per_epoch", self.batches_per_epoch, allow_none=True)
        check_budget("early_stopping_patience", self.early_stopping_patience, allow_none=True)
        check_int("inference_batch_size", self.inference_batch_size)

    @classmethod
    def example(cls) -> str:
        return "tsrsa.Trainer(num_threads=2) or trainer={'num_threads': 2}"

    @classmethod
    def saved_option(cls, name: str, value):
        """No callbacks (code of the session that trained, which a load elsewhere cannot run) and the
        checkpoint folder as text."""
        if name == "callbacks":
            return None
        if name == "checkpoint_dir" and value is not None:
            return str(value)
        return list(value) if isinstance(value, tuple) else value


#: the options of a Trainer, in order
FIELDS = Trainer.field_names()
#: each option's default
DEFAULTS = Trainer.field_defaults()


def saved_trainer(value):
    """What a saved model's config.json keeps of ``trainer=`` ``value``, checked first: None as it is (the
    defaults), a dict its options, a Trainer the JSON object of all its options (:meth:`Trainer.to_json`);
    so that a loaded model's ``get_params()`` is the saved one's (a Trainer comes back as the dict of its
    options, which means the same)."""
    return Trainer.saved(value, "trainer")


def as_trainer(value, what: str = "trainer") -> Trainer:
    """``value`` (a ``trainer=`` argument) as a checked :class:`Trainer`: None is ``Trainer()``, a dict the
    options it names; anything else is refused (``TypeError``), as is a dict's unknown key (``ValueError``
    with the closest option names)."""
    return Trainer.coerce(value, what)


def flat_params(params: dict, cls=None) -> dict:
    """``params`` (``get_params()``) with ``trainer`` written out as its options beside the others, as tsrsa
    0.14 named them, and, given the estimator's class ``cls``, every other option group too (``start``'s kind
    as ``start``, ``rem``'s options as ``n_cyclic``, ...: :func:`~tsrsa.estimator.option_groups.flat_options`):
    what records that compare runs across versions read (a checkpoint's fingerprint, a benchmark row).
    Parameters without a trainer come back as they are."""
    if "trainer" not in params:
        return dict(params)
    if cls is not None and getattr(cls, "option_groups", None):
        return flat_options(cls, params)
    options = as_trainer(params["trainer"])
    out = {k: v for k, v in params.items() if k != "trainer"}
    out.update({name: getattr(options, name) for name in FIELDS})
    return out


def flat_defaults(cls) -> dict:
    """The constructor defaults of ``cls`` with every option group written out (:func:`flat_params`): what a
    record that names each option by its own name compares with today's defaults."""
    return flat_params(cls.param_defaults(), cls)


__all__ = ["DEFAULTS", "FIELDS", "Trainer", "as_trainer",
           "flat_defaults", "flat_params", "saved_trainer"]
