"""A training run's checkpoint on disk, so that a fit cut short resumes where it stopped.

With ``checkpoint_dir`` a fit writes, after every epoch, everything its next epoch depends on to
``<checkpoint_dir>/training_checkpoint.pt``: the network's weights, the optimiser's and the
schedule's state, the gradient scaler's, the best weights so far and their epoch, the patience left,
the history, and the random states that draw the batches and the dropout masks. A fit of the same
model (the same parameters) on the same data that finds the file continues from the epoch after the
last one saved, and ends with exactly the weights an uninterrupted fit would have (on the CPU; on a
GPU up to its kernels' own nondeterminism). A fit that finishes removes the file; one that is
interrupted, killed or fails keeps the last finished epoch's.

The file is written atomically (a temporary file in the same folder, then a rename), so a kill
during the write leaves the previous epoch's checkpoint whole. It carries a fingerprint of the
model's parameters and the training data; a file with another fingerprint is refused, never
resumed into the wrong fit.

Like a saved model, the file is checked before anything is restored from it: a first line with the
SHA-256 of the rest (a file edited or damaged on disk is refused), and then its contents
(:mod:`tsrsa.training.checkpoint_state`: the entries, shapes and dtypes, finite values, a history
within the fit's budget). Each fault is a ValueError that names the file and says how to start
afresh. Before the first epoch the folder is checked to be writable, so a fit that could not save
its state fails at once, not after an epoch. A file without the first line, written by an earlier
tsrsa, is still read, its contents checked alike.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tsrsa.training.checkpoint_optim import SCHEDULES
from tsrsa.training.checkpoint_state import AFRESH, RunLimits, check_state

FILE = "training_checkpoint.pt"
#: the first line of a checkpoint file, before the SHA-256 (hex) of the rest and a newline
HEADER = b"tsrsa training checkpoint 1 sha256="

#: parameters that do not change what a fit computes (left out of the fingerprint)
NOT_IN_FINGERPRINT = ("verbose", "checkpoint_dir", "callbacks", "num_threads")


def fingerprint(name: str, params: dict, values: np.ndarray, offsets: np.ndarray) -> str:
    """A digest of a fit: the estimator's class and parameters, and its training data."""
    kept = {k: v for k, v in params.items() if k not in NOT_IN_FINGERPRINT}
    digest = hashlib.sha256()
    digest.update(json.dumps([name, kept], sort_keys=True, default=repr).encode())
    digest.update(np.ascontiguousarray(values).tobytes())
    digest.update(np.ascontiguousarray(offsets).tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Checkpoint:
    """Where one fit keeps its checkpoint, the fingerprint that says which fit it is, and what the run
    that resumes from it allows (``limits``; :meth:`for_run` sets them, and the file is checked
    against them)."""

    folder: Path
    fingerprint: str
    limits: RunLimits | None = None

    @property
    def path(self) -> Path:
        return Path(self.folder) / FILE

    def for_run(self, config) -> "Checkpoint":
        """This checkpoint, checked against the run of ``config`` (a TrainingConfig): its ``max_epochs``,
        patience, learning rate, weight decay, schedule and gradient scaling."""
        patience = config.early_stopping_patience
        return dataclasses.replace(self, limits=RunLimits(
            int(config.max_epochs), None if patience is None else int(patience), float(config.learning_rate),
            float(config.weight_decay), config.lr_schedule if config.lr_schedule in SCHEDULES else None,
            str(config.precision) in ("16-mixed", "16")))

    def load(self, *, network=None, optimizer=None) -> dict | None:
        """The saved state of this fit, or None when there is none, after checking that the folder is
        writable (:meth:`check_writable`) and the file whole and usable (module docstring): ValueError
        otherwise. ``network`` and ``optimizer``, the run's, when given: the file must fit them too."""
        self.check_writable()
        if not self.path.exists():
            return None
        state = read_state(self.path)
        if not isinstance(state, dict) or not isinstance(state.get("fingerprint"), str) \
                or state["fingerprint"] != self.fingerprint:
            raise ValueError(f"{self.path} holds the checkpoint of another fit (other parameters or data): delete "
                             f"it to start afresh, or give this fit another checkpoint_dir")
        check_state(state, self.path, self.limits, network=network, optimizer=optimizer)
        return state

    def check_writable(self) -> None:
        """ValueError when the folder cannot be created or written (a temporary file is made and removed)."""
        folder = Path(self.folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{FILE}.")
            os.close(fd)
            os.unlink(probe)
        except OSError as error:
            raise ValueError(f"checkpoint_dir {str(folder)!r} cannot be written ({error.strerror or error}); the "
                             f"fit saves its state there after every epoch: give a folder this process can write, "
                             f"or leave checkpoint_dir out") from error

    def save(self, state: dict) -> None:
        """Write ``state`` (and this fit's fingerprint) atomically, after a first line with its checksum."""
        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        torch.save({**state, "fingerprint": self.fingerprint}, buffer)
        payload = buffer.getvalue()
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{FILE}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(HEADER + hashlib.sha256(payload).hexdigest().encode() + b"\n")
                fh.write(payload)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def read_state(path: Path):
    """What the checkpoint file at ``path`` holds, its checksum checked first (a file without the first
    line, of an earlier tsrsa, is read as it is); ValueError naming the file when it is not readable."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ValueError(f"{path} cannot be read ({error.strerror or error}). {AFRESH}") from error
    if data.startswith(HEADER):
        digest, _, data = data[len(HEADER):].partition(b"\n")
        if hashlib.sha256(data).hexdigest().encode() != digest:
            raise ValueError(f"{path} does not match the checksum on its first line: it was modified or damaged "
                             f"after the fit wrote it. {AFRESH}")
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - any unreadable file gets the same advice
        raise ValueError(f"{path} is not a readable training checkpoint ({type(error).__name__}: "
                         f"{str(error)[:200]}); delete it to start the fit afresh, or give this fit another "
                         f"checkpoint_dir") from error


def random_states(rng: np.random.Generator | None, device: torch.device) -> dict:
    """The random states a resumed epoch needs: the batches' generator and torch's (dropout)."""
    state = {"torch": torch.get_rng_state()}
    if rng is not None:
        state["numpy"] = json.dumps(rng.bit_generator.state)  # big integers: kept exact as text
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_random_states(state: dict, rng: np.random.Generator | None, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if rng is not None and "numpy" in state:
        rng.bit_generator.state = json.loads(state["numpy"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def check_checkpointing(checkpoint_dir, callbacks, devices) -> None:
    """``checkpoint_dir`` a path (str or os.PathLike) or None; ``callbacks`` None or a list of callables;
    a clear error otherwise."""
    if checkpoint_dir is not None:
        if not isinstance(checkpoint_dir, (str, os.PathLike)) or not str(checkpoint_dir):
            raise TypeError(f"checkpoint_dir must be a folder path (str or pathlib.Path) or None, got "
                            f"{checkpoint_dir!r} ({type(checkpoint_dir).__name__})")
        if Path(checkpoint_dir).exists() and not Path(checkpoint_dir).is_dir():
            raise ValueError(f"checkpoint_dir={str(checkpoint_dir)!r} is a file; give a folder (it is created "
                             f"when missing)")
        if devices is not None and not isinstance(devices, bool) and isinstance(devices, int) and devices > 1:
            raise ValueError(f"checkpoint_dir trains in one process; devices={devices} spawns several: use "
                             f"devices=1 with checkpoints, or leave checkpoint_dir out")
    if callbacks is None:
        return
    if not isinstance(callbacks, (list, tuple)) or not all(callable(c) for c in callbacks):
        raise TypeError(f"callbacks must be a list of callables, each called with every epoch's record "
                        f"(a dict: epoch, train_loss, val_loss, learning_rate, seconds); got {callbacks!r}")


def epoch_hook(callbacks, also=None, member: int | None = None):
    """One ``on_epoch_end(record)`` calling each of ``callbacks`` (the user's: experiment trackers, say)
    and then ``also`` (the tuner's pruning) with its own copy of the record, which names the ensemble's
    ``member`` when one is given; None when there are none."""
    hooks = [*(callbacks or ()), *([also] if also is not None else [])]
    if not hooks:
        return None
    extra = {} if member is None else {"member": int(member)}

    def on_epoch_end(record: dict) -> None:
        for hook in hooks:
            hook({**record, **extra})

    return on_epoch_end
