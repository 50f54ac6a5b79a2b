"""Data-parallel training through torch.distributed's DistributedDataParallel (DDP).

Two ways in, one training loop:

- ``devices=k`` on one machine (strategy "auto" or "ddp_spawn"; with ``"ddp_spawn"`` also k = 1,
  which runs one device through the multi-device code): ``fit`` spawns k worker
  processes (``torch.multiprocessing``, start method "spawn"; backend gloo on CPU, nccl on
  GPU; rendezvous through a file store in a temporary folder). Every worker gets the same
  initial network and windows, takes its shard of every global batch, and DDP averages the
  gradients; rank 0 sends the trained weights and the history back through that folder.
- launched by ``torchrun`` (RANK, WORLD_SIZE, LOCAL_RANK set; strategy "auto" or "ddp"; a launch of
  one process joins only when strategy="ddp" asks for it):
  every process runs the user's script and ``fit`` joins the process group (initialising it
  from the environment when the caller has not) instead of spawning. Multi-host training is
  torchrun's ``--nnodes``/``--rdzv-endpoint``; every rank ends with the same fitted model.

A global batch is ``batch_size`` windows of one shuffled order that every rank draws from the
same seed; rank r takes the r-th of ``world_size`` near-equal parts. Each rank's loss is scaled
by its part's share of the global batch, so the averaged gradient is exactly that of the whole
global batch (a one-process run on the same batches takes the same steps, up to float sums).
A last global batch of fewer windows than ranks is dropped.
"""
from __future__ import annotations

import atexit
import contextlib
import copy
import datetime
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from tsrsa.training.batches import WindowLoader
from tsrsa.training.devices import resolve_device, resolve_devices
from tsrsa.training.loop import TrainingResult, train_network
from tsrsa.training.ranks import SINGLE, Rank  # noqa: F401  SINGLE: still importable from here
from tsrsa.training.seeding import seeded

STRATEGIES = ("auto", "single_device", "ddp", "ddp_spawn")
TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


# ---------------------------------------------------------------------- where a fit runs
def launched_by_torchrun() -> bool:
    """Whether this process is one rank of several started by torchrun (or an equal launcher)."""
    return all(v in os.environ for v in TORCHRUN_VARIABLES) and int(os.environ["WORLD_SIZE"]) > 1


def _joinable(world_of_one: bool = False) -> bool:
    """Whether a process group of several ranks is there to join (``world_of_one``: one rank will do,
    as when ``strategy="ddp"`` is asked for under ``torchrun --nproc-per-node=1``)."""
    if launched_by_torchrun():
        return True
    if world_of_one and all(v in os.environ for v in TORCHRUN_VARIABLES):
        return True
    dist = torch.distributed
    smallest = 1 if world_of_one else 2
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() >= smallest


def check_strategy(strategy) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not supported; use one of {STRATEGIES}")


def device_count(devices) -> int:
    """How many devices ``devices`` asks for (None and "auto": one)."""
    if devices in (None, "auto"):
        return 1
    return devices if isinstance(devices, int) else len(devices)


@dataclass
class Placement:
    """How one fit runs: in this process ("single"), in spawned workers ("spawn") or as one rank
    of a process group started outside (``"join"``)."""

    mode: str  # "single", "spawn" or "join"
    devices: list = field(default_factory=list)  # torch devices: this process's one, or one per worker
    world_size: int = 1

    @property
    def device(self) -> torch.device:
        """Where this process holds the network during and after fitting."""
        return self.devices[0]


def plan_placement(strategy: str, accelerator: str, devices) -> Placement:
    """Decide where a fit runs (raises ValueError for an impossible request)."""
    check_strategy(strategy)
    count = device_count(devices)
    if strategy == "single_device" and count > 1:
        raise ValueError(f"strategy='single_device' trains on one device, but devices={devices!r}; use "
                         f"strategy='auto' or 'ddp_spawn' to train data-parallel")
    join = strategy == "ddp" or (strategy == "auto" and _joinable())
    if strategy == "ddp_spawn" and launched_by_torchrun():
        raise ValueError("strategy='ddp_spawn' inside a torchrun launch: torchrun already started one process "
                         "per device; use strategy='ddp' (or 'auto') to join them")
    if join:
        if not _joinable(world_of_one=strategy == "ddp"):
            raise ValueError(
                "strategy='ddp' joins the processes of a torchrun launch (RANK, WORLD_SIZE and LOCAL_RANK "
                "set, WORLD_SIZE > 1), and this process was not started that way. Launch the script with "
                "`torchrun --nproc-per-node=K script.py`, or train on K devices of this machine from one "
                "process with devices=K (strategy 'auto' or 'ddp_spawn')"
            )
        local = int(os.environ.get("LOCAL_WORLD_SIZE", count))
        if devices not in (None, "auto", 1) and count != local:  # 1: one device per process
            raise ValueError(f"devices={devices!r} but torchrun started {local} process(es) on this machine, "
                             f"one device each; pass devices=None")
        return Placement("join", [_local_device(accelerator)], _world_size())
    if strategy == "single_device" or (count == 1 and strategy == "auto"):
        return Placement("single", [resolve_device(accelerator, devices)])
    # "ddp_spawn" on one device still spawns a worker and goes through DDP: the multi-device code
    return Placement("spawn", resolve_devices(accelerator, devices), count)


def _local_device(accelerator: str) -> torch.device:
    device = resolve_device(accelerator, None)
    if device.type == "cuda":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return device


def _world_size() -> int:
    dist = torch.distributed
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ["WORLD_SIZE"])


# ---------------------------------------------------------------------- joining a group
def _backend(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def join_process_group(device: torch.device, seed: int) -> tuple[Rank, int]:
    """This rank of the torchrun group (initialised from the environment if needed) and the seed
    of rank 0, which every rank then uses."""
    dist = torch.distributed
    if not dist.is_initialized():
        dist.init_process_group(_backend(device))
        atexit.register(_leave_process_group)  # a group left to the interpreter's exit can abort the process
    if device.type == "cuda":
        torch.cuda.set_device(device)
    shared = torch.tensor([seed], dtype=torch.int64, device=device if dist.get_backend() == "nccl" else "cpu")
    dist.broadcast(shared, src=0)
    return Rank(dist.get_rank(), dist.get_world_size(), in_group=True), int(shared.item())


#: how long a rank waits at exit for the others to reach the end of their script
EXIT_WAIT = datetime.timedelta(seconds=60)


def _leave_process_group() -> None:
    """At exit, the group ``join_process_group`` started, if still open: on the CPU (gloo) every rank first
    waits for the others, at most ``EXIT_WAIT`` (rank 0 holds the rendezvous store, and a rank whose store
    closed first could abort), then each closes its side."""
    dist = torch.distributed
    if not dist.is_initialized():
        return
    if dist.get_backend() == "gloo":
        with contextlib.suppress(RuntimeError):  # a rank that failed or left already: close this side anyway
            dist.monitored_barrier(timeout=EXIT_WAIT)
    dist.destroy_process_group()


def rank_seed(seed: int, rank: int) -> int:
    """The torch seed of one rank (its dropout stream); rank 0 of 1 keeps ``seed`` itself."""
    return seed if rank == 0 else int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


# ---------------------------------------------------------------------- spawning workers
@dataclass
class TrainingJob:
    """Everything a worker needs to train its replica (picklable, built by the forecaster)."""

    network: torch.nn.Module  # initial weights, on the CPU
    loss_fn: torch.nn.Module
    train_windows: object  # tsrsa.data.SlidingWindows
    val_windows: object  # or None
    batch_size: int
    inference_batch_size: int
    config: object  # TrainingConfig
    seed: int
    devices: list  # one torch device per rank
    num_threads: int | None  # CPU threads of each worker
    verbose: int = 0


@contextlib.contextmanager
def _child_environment(verbose: int):
    """Environment the spawned workers inherit: quiet C++ logs at verbose=0."""
    changes = {"TORCH_CPP_LOG_LEVEL": "ERROR"} if not verbose else {}
    changes = {k: v for k, v in changes.items() if k not in os.environ}
    os.environ.update(changes)
    try:
        yield
    finally:
        for key in changes:
            os.environ.pop(key, None)


def spawn_training(job: TrainingJob, timeout_s: float = 1800.0):
    """Train ``job`` data-parallel in ``len(job.devices)`` spawned workers.

    Returns (state_dict, TrainingResult) of rank 0. A NaN/inf loss raises FloatingPointError
    here with the best weights so far as ``error.state_dict`` and the finished epochs as
    ``error.training_result``.
    """
    world_size = len(job.devices)
    with tempfile.TemporaryDirectory(prefix="tsrsa-ddp-") as folder, _child_environment(job.verbose):
        outcome = Path(folder) / "rank0.pt"
        try:
            torch.multiprocessing.start_processes(
                _worker, args=(job, world_size, folder, timeout_s), nprocs=world_size, join=True,
                start_method="spawn",
            )
        except torch.multiprocessing.ProcessExitedException as error:
            # a worker killed by a signal: an error, unless rank 0 had already written the
            # outcome (after the last collective, so every replica had finished training) and the
            # crash came while the process was shutting down
            if not outcome.exists():
                raise
            warnings.warn(f"a data-parallel worker ended abnormally after training finished ({error}); "
                          f"the fitted weights are complete", RuntimeWarning, stacklevel=2)
        out = torch.load(outcome, map_location="cpu", weights_only=True)
    result = TrainingResult(history=out["history"], best_epoch=out["best_epoch"],
                            stopped_early=out["stopped_early"], start_edge=out.get("start_edge"))
    if out["error"]:
        error = FloatingPointError(out["error"])
        error.training_result = result
        error.state_dict = out["state"]
        raise error
    return out["state"], result


def _worker(rank: int, job: TrainingJob, world_size: int, folder: str, timeout_s: float) -> None:
    """One spawned rank: join the group, train its replica, rank 0 writes the outcome."""
    import datetime

    device = job.devices[rank]
    if job.num_threads is not None:
        torch.set_num_threads(job.num_threads)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist = torch.distributed
    # rendezvous through a file in the job's folder: no port to find, and no rank hosts a store
    # server that the others still need while they leave
    store = dist.FileStore(str(Path(folder) / "rendezvous"), world_size)
    dist.init_process_group(_backend(device), store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    me = Rank(rank, world_size, in_group=True)
    train = WindowLoader(job.train_windows, job.batch_size, shuffle=True, device=device, rank=me,
                         max_batches=job.config.batches_per_epoch)
    val = None
    if job.val_windows is not None:
        val = WindowLoader(job.val_windows, job.inference_batch_size, shuffle=False, device=device, rank=me)
    # torch.multiprocessing hands every worker the same shared-memory tensors: own a copy
    network, loss_fn = copy.deepcopy(job.network).to(device), copy.deepcopy(job.loss_fn).to(device)
    config = job.config if rank == 0 else _silent(job.config)
    error, result = "", TrainingResult()
    try:
        with warnings.catch_warnings():
            if not job.verbose:
                warnings.simplefilter("ignore")
            with seeded(rank_seed(job.seed, rank), device):
                rng = np.random.default_rng(job.seed)  # the same shuffled order on every rank
                try:
                    result = train_network(network, loss_fn, train, val, config, device=device, rng=rng,
                                           rank=me)
                except FloatingPointError as failure:  # every rank sees the same reduced loss
                    error, result = str(failure), failure.training_result
        if rank == 0:
            state = {k: v.detach().cpu() for k, v in network.state_dict().items()}
            partial = Path(folder) / "rank0.pt.partial"  # renamed when complete: never half an outcome
            torch.save({"state": state, "history": result.history, "best_epoch": result.best_epoch,
                        "start_edge": result.start_edge,
                        "stopped_early": result.stopped_early, "error": error}, partial)
            os.replace(partial, Path(folder) / "rank0.pt")
        dist.barrier()  # leave together
    finally:
        dist.destroy_process_group()


def _silent(config):
    import dataclasses

    return dataclasses.replace(config, verbose=0)
