"""Data-parallel training: where a fit runs, how batches are shared, and 2 processes taking
the steps of 1.

The multi-process check runs as subprocesses with a timeout, one thread per process and a
rendezvous on 127.0.0.1, so a hang fails the test instead of stalling the suite.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

from tsrsa import TransformerForecaster
from tsrsa.data.windows import training_windows
from tsrsa.training import WindowLoader
from tsrsa.training.distributed import plan_placement, rank_seed
from tsrsa.training.ranks import Rank

from conftest import make_panel

CPU = torch.device("cpu")
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_local_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch_ranks(script, cwd, world_size: int = 2):
    """Start ``script`` as ``world_size`` ranks, as torchrun starts them (one thread each, a rendezvous on
    127.0.0.1); returns ``finish(timeout)``, which waits for them and fails the test with their output
    when one fails or hangs."""
    port = str(free_local_port())
    procs = []
    for rank in range(world_size):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world_size),
               "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
               "OMP_NUM_THREADS": "1", "TORCH_CPP_LOG_LEVEL": "ERROR"}
        procs.append(subprocess.Popen([sys.executable, str(script)], cwd=cwd, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))

    def finish(timeout: float) -> None:
        try:
            outputs = [p.communicate(timeout=timeout)[0] for p in procs]
        finally:
            for p in procs:
                p.kill()
        assert [p.returncode for p in procs] == [0] * world_size, "\n".join(outputs)

    return finish


@pytest.fixture
def no_torchrun(monkeypatch):
    for name in TORCHRUN_ENV:
        monkeypatch.delenv(name, raising=False)


def test_placement(no_torchrun, monkeypatch):
    assert plan_placement("auto", "cpu", None).mode == "single"
    spawn = plan_placement("auto", "cpu", 3)
    assert (spawn.mode, spawn.world_size, spawn.devices) == ("spawn", 3, [CPU] * 3)
    assert plan_placement("ddp_spawn", "cpu", [0, 1]).world_size == 2
    with pytest.raises(ValueError, match="not started that way.*torchrun --nproc-per-node"):
        plan_placement("ddp", "cpu", None)
    with pytest.raises(ValueError, match="single_device' trains on one device"):
        plan_placement("single_device", "cpu", 2)
    with pytest.raises(ValueError, match="strategy='dp' is not supported"):
        plan_placement("dp", "cpu", None)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    joined = plan_placement("auto", "cpu", None)
    assert (joined.mode, joined.world_size, joined.device) == ("join", 4, CPU)
    assert plan_placement("single_device", "cpu", None).mode == "single"  # opting out under torchrun
    assert plan_placement("ddp", "cpu", 1).mode == "join"  # one device per process
    with pytest.raises(ValueError, match="torchrun started 2 process"):
        plan_placement("ddp", "cpu", 4)
    with pytest.raises(ValueError, match="ddp_spawn' inside a torchrun launch"):
        plan_placement("ddp_spawn", "cpu", 2)


def test_a_world_of_one_device_takes_the_data_parallel_path_when_asked(no_torchrun, monkeypatch):
    assert plan_placement("auto", "cpu", 1).mode == "single"
    for devices in (None, 1, [0]):
        one = plan_placement("ddp_spawn", "cpu", devices)
        assert (one.mode, one.world_size, one.devices) == ("spawn", 1, [CPU])
    monkeypatch.setenv("RANK", "0")  # torchrun --nproc-per-node=1
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert plan_placement("auto", "cpu", None).mode == "single"
    joined = plan_placement("ddp", "cpu", None)
    assert (joined.mode, joined.world_size) == ("join", 1)


@pytest.mark.processes
def test_ddp_spawn_on_one_device_trains_through_ddp_and_takes_the_steps_of_a_plain_fit(no_torchrun, monkeypatch):
    import torch.nn.parallel

    wrapped = []
    original = torch.nn.parallel.DistributedDataParallel.__init__

    def spy(self, *args, **kwargs):
        wrapped.append(1)
        original(self, *args, **kwargs)

    df = make_panel(length=48)
    plain = TransformerForecaster(**PARAMS).fit(df)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")  # joining: torchrun --nproc-per-node=1
    monkeypatch.setenv("MASTER_PORT", str(free_local_port()))
    for name, value in {"RANK": 0, "LOCAL_RANK": 0, "WORLD_SIZE": 1, "LOCAL_WORLD_SIZE": 1}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.setattr(torch.nn.parallel.DistributedDataParallel, "__init__", spy)
    try:
        joined = TransformerForecaster(**with_trainer(strategy="ddp"), start={"margin": 1e-9}).fit(df)
        assert torch.distributed.get_backend() == "gloo" and torch.distributed.get_world_size() == 1
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    assert wrapped == [1]  # the one rank went through DistributedDataParallel
    for name in TORCHRUN_ENV:
        monkeypatch.delenv(name)
    seen = []  # the worker cannot call back: its epochs are replayed to the callbacks
    spawned = TransformerForecaster(**with_trainer(strategy="ddp_spawn", callbacks=[seen.append]),  # in a worker
                                    start={"margin": 1e-9}).fit(df)
    assert seen == spawned.fit_history_.to_dict(orient="records")
    # a margin this small decides as none does, and the worker's edge over the start comes back
    assert spawned.start_["edge"] == pytest.approx(joined.start_["edge"], rel=1e-4) and joined.start_["edge"] > 0
    assert spawned.best_epoch_ == joined.best_epoch_ == plain.best_epoch_ > 0
    for fitted in (joined, spawned):
        for name, value in plain.network_.state_dict().items():
            torch.testing.assert_close(fitted.network_.state_dict()[name], value, rtol=0, atol=1e-6, msg=name)
        np.testing.assert_allclose(fitted.fit_history_["val_loss"], plain.fit_history_["val_loss"], rtol=1e-6)


def test_an_ensemble_joined_as_one_rank_trains_each_member_through_ddp_as_a_plain_fit_does(no_torchrun, monkeypatch):
    import torch.nn.parallel

    wrapped = []
    original = torch.nn.parallel.DistributedDataParallel.__init__
    df = make_panel(length=48)
    plain = TransformerForecaster(**PARAMS, ensemble_size=2).fit(df)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_local_port()))
    for name, value in {"RANK": 0, "LOCAL_RANK": 0, "WORLD_SIZE": 1, "LOCAL_WORLD_SIZE": 1}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.setattr(torch.nn.parallel.DistributedDataParallel, "__init__",
                        lambda self, *a, **k: (wrapped.append(1), original(self, *a, **k))[1])
    try:
        joined = TransformerForecaster(**with_trainer(strategy="ddp"), ensemble_size=2).fit(df)
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    assert wrapped == [1, 1]  # each member went through DistributedDataParallel
    assert joined.best_epoch_ == plain.best_epoch_ and joined.ensemble_size_ == 2
    for name, value in plain.network_.state_dict().items():
        torch.testing.assert_close(joined.network_.state_dict()[name], value, rtol=0, atol=1e-6, msg=name)


def test_ranks_share_each_global_batch():
    values = np.arange(50, dtype=np.float32)
    windows = training_windows(values, np.array([0, 50]), np.array([50]), 4, 2)  # 45 windows
    alone = WindowLoader(windows, 8, shuffle=True, device=CPU)
    ranks = [WindowLoader(windows, 8, shuffle=True, device=CPU, rank=Rank(r, 3)) for r in range(3)]
    assert alone.n_windows == 45 and ranks[0].n_windows == 45  # last batch: 5 windows >= 3 ranks
    single = [x[:, 0].numpy() for x, _ in alone.iterate(np.random.default_rng(0))]
    parts = [list(r.shards(np.random.default_rng(0))) for r in ranks]
    for step, batch in enumerate(single):
        shards = [p[step] for p in parts]
        np.testing.assert_array_equal(np.concatenate([s[0][:, 0].numpy() for s in shards]), batch)
        # each window's weight in the DDP average (share / world of its rank's mean) is 1 / batch
        for x, _, share in shards:
            assert share / (3 * len(x)) == pytest.approx(1 / len(batch))
    tiny = WindowLoader(training_windows(values[:12], np.array([0, 12]), np.array([12]), 4, 2), 3,
                        shuffle=False, device=CPU, rank=Rank(0, 2))  # 7 windows: 3, 3, then 1 < 2 ranks
    assert tiny.n_windows == 6 and len(tiny) == 2


def test_rank_seeds():
    assert rank_seed(5, 0) == 5
    assert len({rank_seed(5, r) for r in range(4)}) == 4
    assert rank_seed(5, 1) == rank_seed(5, 1)


RANK_SCRIPT = """
import sys, torch
sys.path.insert(0, {tests!r})
from conftest import make_panel
from tsrsa import TransformerForecaster
model = TransformerForecaster(**{params!r}).fit(make_panel(length=48))
torch.save({{"state": model.network_.state_dict(), "val": model.fit_history_["val_loss"].tolist()}},
           "rank%s.pt" % torch.distributed.get_rank())
"""

# dropout off, so that the only difference is who computes which part of each batch
PARAMS = dict(h=4, input_size=8, patch_len=2, d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0,
              max_epochs=2, batch_size=16, val_size=4, trainer={"accelerator": "cpu", "num_threads": 1},
              random_state=3)


def with_trainer(**options) -> dict:
    """PARAMS with more trainer options (``strategy="ddp"``)."""
    return {**PARAMS, "trainer": {**PARAMS["trainer"], **options}}


@pytest.mark.skipif(not os.environ.get("TSRSA_SLOW_TESTS"), reason=(
    "two torchrun-style rank processes cost ~5 s of interpreter start-up; the suite runs the spawn "
    "path's equality check (test_example_spawns_two_cpu_workers); set TSRSA_SLOW_TESTS=1 to run this too"))
def test_two_processes_take_the_steps_of_one(tmp_path, no_torchrun):
    """Two ranks (launched as torchrun does: RANK, WORLD_SIZE, ... on 127.0.0.1) end with the
    weights of a one-process fit on the same global batches (3 series x 33 windows, batch 16:
    2 epochs x 7 steps, the last of 3 windows split 1/2)."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT.format(tests=os.path.dirname(__file__), params=with_trainer(strategy="ddp")))
    finish = launch_ranks(script, tmp_path)
    single = TransformerForecaster(**PARAMS).fit(make_panel(length=48))  # meanwhile, here
    finish(timeout=120)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(2)]
    for name, value in single.network_.state_dict().items():
        torch.testing.assert_close(ranks[0]["state"][name], ranks[1]["state"][name], rtol=0, atol=0)
        torch.testing.assert_close(ranks[0]["state"][name], value, rtol=0, atol=1e-5)
    np.testing.assert_allclose(ranks[0]["val"], single.fit_history_["val_loss"], rtol=1e-5)


@pytest.mark.processes
def test_example_spawns_two_cpu_workers(tmp_path):
    """examples/data_parallel.py on 2 CPU processes (fit spawns them; one thread each, launched
    as a subprocess with a timeout): after its optimisation steps (one epoch of 3 series x 49
    windows, batch 16: 10 steps, the last of 3 windows split 1/2) the saved model holds the
    weights of a one-process fit on the same global batches, within 1e-5."""
    import tsrsa

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    example = os.path.join(root, "examples", "data_parallel.py")
    env = {**{k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV}, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, example, "--tiny", "--accelerator", "cpu", "--devices", "2",
                          "--max-epochs", "1", "--batch-size", "16", "--output-dir", str(tmp_path / "model")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "fit in" in run.stdout
    spawned = tsrsa.load(tmp_path / "model")
    assert spawned.resolved_trainer.devices == 2
    sys.path.insert(0, os.path.dirname(example))
    try:
        from data_parallel import demo_panel
    finally:
        sys.path.pop(0)
    options = {**spawned.get_params()["trainer"], "devices": None, "num_threads": 1}
    single = TransformerForecaster(**{**spawned.get_params(), "trainer": options}).fit(demo_panel(3, 60))
    for name, value in single.network_.state_dict().items():
        torch.testing.assert_close(spawned.network_.state_dict()[name], value, rtol=0, atol=1e-5)
