"""Ray Train's ``TorchTrainer`` launches a data-parallel fit through the torchrun path.

Ray starts the workers and their process group (gloo, on this machine's CPUs); ``fit`` inside
``train_loop_per_worker`` joins it. examples/ray_train.py runs as a subprocess with a timeout, so
a hang fails the test instead of stalling the suite.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "ray_train.py"
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
#: two workers, the tiny network (dropout off): 3 series x 45 training windows, batch 16, 2 epochs
ARGV = ["--workers", "2", "--tiny", "--batch-size", "16", "--max-epochs", "2", "--num-threads", "1"]


def ray_example():
    """examples/ray_train.py as a module (it imports Ray only when it runs)."""
    spec = importlib.util.spec_from_file_location("example_ray_train", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_refuses_bad_arguments(capsys):
    module = ray_example()
    for argv in (["--workers", "0"], ["--batch-size", "-1"], ["--num-threads", "0"]):
        with pytest.raises(SystemExit):
            module.parse(argv)
        assert "must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        module.parse(["--accelerator", "tpu"])
    assert "invalid choice: 'tpu'" in capsys.readouterr().err
    assert module.forecaster_params(module.parse(ARGV))["dropout"] == 0.0


@pytest.mark.skipif(not os.environ.get("TSRSA_SLOW_TESTS"), reason=(
    "starting Ray and two Ray Train workers takes ~45 s on two cores; the suite runs the joined ranks' "
    "checks in tests/test_shards.py (two torchrun-style ranks) and tests/test_distributed.py; set "
    "TSRSA_SLOW_TESTS=1 (and pip install 'tsrsa[ray]') to run this too"))
def test_two_ray_workers_take_the_steps_of_one(tmp_path):
    """Two Ray Train workers end with the weights of a one-process fit on the same global batches
    (2 epochs x 9 steps, the last of 7 windows split 4/3), within 1e-5."""
    pytest.importorskip("ray.train", reason="Ray Train is not installed (pip install 'tsrsa[ray]')")
    import numpy as np

    import tsrsa
    from tsrsa import TransformerForecaster

    module = ray_example()
    drop = (*TORCHRUN_ENV, "RAY_ADDRESS")  # Ray starts a local instance of its own
    env = {**{k: v for k, v in os.environ.items() if k not in drop}, "OMP_NUM_THREADS": "1"}
    run = subprocess.Popen([sys.executable, str(SCRIPT), *ARGV, "--output-dir", str(tmp_path / "model")],
                           env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:  # meanwhile, here: the same fit in one process
        single = TransformerForecaster(**module.forecaster_params(module.parse(ARGV)))
        single.fit(module.demo_panel(n_series=3, length=60))
        output = run.communicate(timeout=300)[0]
    finally:
        run.kill()
    assert run.returncode == 0, output
    assert "data-parallel over 2 ranks" in output, output  # the workers joined Ray's group
    ray_fitted = tsrsa.load(tmp_path / "model")
    assert ray_fitted.get_params() == single.get_params()
    for name, value in single.network_.state_dict().items():
        torch.testing.assert_close(ray_fitted.network_.state_dict()[name], value, rtol=0, atol=1e-5, msg=name)
    np.testing.assert_allclose(ray_fitted.fit_history_["val_loss"], single.fit_history_["val_loss"], rtol=1e-5)
