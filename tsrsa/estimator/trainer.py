"""How a neural forecaster trains, apart from what it builds: :class:`Trainer`, one argument.

What to build (the architecture, the loss, the budget, the data's columns) is the estimator's own
arguments; where and how the training runs (device, processes, precision, compilation, threads,
progress, checkpoints, callbacks) is one value, ``trainer=``, as darts and neuralforecast pass their
``trainer_kwargs`` and Hugging Face its ``TrainingArguments``::

    RSAForecaster(h=24, trainer=tsrsa.Trainer(accelerator="gpu", precision="bf16-mixed"))
    RSAForecaster(h=24, trainer={"num_threads": 2})        # a dict of the same options

``trainer=None`` (the default) is ``Trainer()``. A dict is read as the options it names (an unknown
key is refused with the closest names); the estimator keeps the value as given (sklearn's rule) and
reads it through :func:`as_trainer`.

The nine options were the estimators' own arguments before tsrsa 0.15 (``num_threads=2``). Until
0.16 (``REMOVED_IN``) the constructors and ``set_params`` still take them, with a
``DeprecationWarning`` that names the new spelling, and fold them into ``trainer``
(:func:`fold_into_trainer`); a model folder saved with them loads without a warning
(``NeuralForecaster.upgrade_params``). :func:`flat_params` writes a parameter dict the old way,
with the trainer's options beside the others, for records that compare runs across versions
(checkpoint fingerprints, benchmark rows).
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

from tsrsa.estimator.params import check_int, suggest_names
from tsrsa.training.checkpoint import check_checkpointing
from tsrsa.training.devices import check_accelerator, check_compile, check_precision
from tsrsa.training.distributed import check_strategy

#: the version that removes the nine flat arguments (``num_threads=2`` beside ``h=``)
REMOVED_IN = "0.16"


@dataclass(frozen=True, repr=False)
class Trainer:
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

    def __post_init__(self):
        try:
            check_accelerator(self.accelerator, self.devices)
            check_strategy(self.strategy)
            check_precision(self.precision)
            check_compile(self.compile)
            check_int("num_threads", self.num_threads, allow_none=True)
            check_checkpointing(self.checkpoint_dir, self.callbacks, self.devices)
            check_int("verbose", self.verbose, minimum=0)
        except (TypeError, ValueError) as error:
            raise type(error)(f"Trainer: {error}") from None

    def __repr__(self) -> str:
        changed = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                   if not _same(getattr(self, f.name), f.default)]
        return f"Trainer({', '.join(changed)})"

    def to_json(self) -> dict:
        """Every option as JSON holds it, for a saved model: no callbacks (code of the session that trained,
        which a load elsewhere cannot run) and the checkpoint folder as text."""
        return {name: _saved_option(name, getattr(self, name)) for name in FIELDS}


#: the options of a Trainer, in order (also the nine flat arguments of tsrsa 0.14)
FIELDS = tuple(f.name for f in dataclasses.fields(Trainer))
#: each option's default
DEFAULTS = {f.name: f.default for f in dataclasses.fields(Trainer)}


def _saved_option(name: str, value):
    if name == "callbacks":
        return None
    if name == "checkpoint_dir" and value is not None:
        return str(value)
    return list(value) if isinstance(value, tuple) else value


def saved_trainer(value):
    """What a saved model's config.json keeps of ``trainer=`` ``value``, checked first: None as it is (the
    defaults), a dict its options, a Trainer the JSON object of all its options (:meth:`Trainer.to_json`);
    so that a loaded model's ``get_params()`` is the saved one's (a Trainer comes back as the dict of its
    options, which means the same)."""
    options = as_trainer(value)
    if value is None:
        return None
    if isinstance(value, Trainer):
        return options.to_json()
    return {name: _saved_option(name, option) for name, option in value.items()}


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def as_trainer(value, what: str = "trainer") -> Trainer:
    """``value`` (a ``trainer=`` argument) as a checked :class:`Trainer`: None is ``Trainer()``, a dict the
    options it names; anything else is refused (``TypeError``), as is a dict's unknown key (``ValueError``
    with the closest option names)."""
    if value is None:
        return Trainer()
    if isinstance(value, Trainer):
        return value
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"{what} keys are option names (text), got {key!r}; use e.g. "
                                f"{what}={{'num_threads': 2}}")
            if key not in FIELDS:
                hint = suggest_names(key, FIELDS, value=value[key], defaults=DEFAULTS)
                raise ValueError(f"{what} has no option {key!r}; {hint} (a tsrsa.Trainer's options: "
                                 f"{', '.join(FIELDS)})")
        return Trainer(**value)
    raise TypeError(f"{what} must be None, a tsrsa.Trainer or a dict of its options, got {value!r} "
                    f"({type(value).__name__}); e.g. {what}=tsrsa.Trainer(num_threads=2) or "
                    f"{what}={{'num_threads': 2}}")


def fold_into_trainer(trainer, options: dict, *, replace: bool = True):
    """The ``trainer=`` value ``trainer`` (None, a dict or a Trainer) with the flat ``options`` folded in:
    a Trainer stays a Trainer (``dataclasses.replace``), None or a dict becomes a dict (checked at fit,
    as every argument is). ``replace=False`` (a constructor call) refuses an option given both ways with
    another value (``TypeError``); ``set_params`` replaces it."""
    if not options:
        return trainer
    if isinstance(trainer, Trainer):
        return dataclasses.replace(trainer, **options)
    if trainer is None:
        return dict(options)
    if isinstance(trainer, Mapping):
        if not replace:
            for name, value in options.items():
                if name in trainer and not _same(trainer[name], value):
                    raise TypeError(f"{name} is given twice, as {name}={value!r} and in trainer={dict(trainer)!r}; "
                                    f"give it once, in trainer")
        return {**trainer, **options}
    return as_trainer(trainer)  # the TypeError of a value that is no trainer


def deprecation(owner: str, options: dict) -> str:
    """The DeprecationWarning's text for the flat ``options`` passed to ``owner`` (``RSAForecaster`` or
    ``RSAForecaster.set_params``), with their new spelling."""
    given = ", ".join(f"{k}={v!r}" for k, v in options.items())
    as_dict = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in options.items()) + "}"
    moved = ", ".join(options)
    return (f"{owner}({given}): {moved} moved into the trainer argument in tsrsa 0.15, and the old spelling goes "
            f"in tsrsa {REMOVED_IN}; pass trainer=tsrsa.Trainer({given}) or trainer={as_dict}")


def split_flat(params: dict) -> tuple[dict, dict]:
    """(the parameters without the nine flat trainer options, those options), each in the given order."""
    flat = {k: v for k, v in params.items() if k in FIELDS}
    return {k: v for k, v in params.items() if k not in flat}, flat


def upgraded(params: dict, *, owner: str | None = None, current=None, replace: bool = True,
             stacklevel: int = 2) -> dict:
    """``params`` with the flat trainer options folded into ``trainer`` (given there, else ``current``).
    ``owner`` (the call's name) warns with a DeprecationWarning at ``stacklevel``; None folds silently (a
    saved folder, the command line)."""
    rest, flat = split_flat(params)
    if not flat:
        return params
    if owner is not None:
        warnings.warn(deprecation(owner, flat), DeprecationWarning, stacklevel=stacklevel + 1)
    rest["trainer"] = fold_into_trainer(rest.get("trainer", current), flat, replace=replace)
    return rest


def flat_params(params: dict) -> dict:
    """``params`` (``get_params()``) with ``trainer`` written out as its nine options beside the others, as
    tsrsa 0.14 named them: what records that compare runs across versions read (a checkpoint's
    fingerprint, a benchmark row). Parameters without a trainer come back as they are."""
    if "trainer" not in params:
        return dict(params)
    options = as_trainer(params["trainer"])
    out = {k: v for k, v in params.items() if k != "trainer"}
    out.update({name: getattr(options, name) for name in FIELDS})
    return out


__all__ = ["DEFAULTS", "FIELDS", "REMOVED_IN", "Trainer", "as_trainer", "deprecation", "flat_params",
           "fold_into_trainer", "saved_trainer", "split_flat", "upgraded"]
