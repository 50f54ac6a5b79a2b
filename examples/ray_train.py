"""Data-parallel training launched by Ray Train's ``TorchTrainer``.

Ray starts one worker process per rank, initialises the torch process group in each (gloo on
CPUs, nccl on GPUs) and sets RANK, WORLD_SIZE and LOCAL_RANK, as torchrun does; ``fit`` inside
the training function joins that group, so the forecaster trains data-parallel with no Ray code
of its own. Every rank ends with the same fitted model; rank 0 saves it into a Ray checkpoint,
which this script reads back and saves to ``--output-dir``.

One machine, two CPU workers (Ray started here, one CPU per worker)::

    python examples/ray_train.py --workers 2 --tiny --output-dir model

Several machines: start a Ray cluster, then run the script on the head machine with one worker
per GPU of the cluster (``--address auto`` joins the running cluster instead of starting one)::

    ray start --head --port=6379                      # on the head machine
    ray start --address=HEAD_IP:6379                  # on every other machine
    python examples/ray_train.py --address auto --workers 16 --accelerator gpu \\
        --storage-path /shared/ray_results --output-dir model

With several machines ``--storage-path`` must be a folder every machine sees (a shared file
system, or a cloud bucket URI for Ray): rank 0 may run on any machine and its checkpoint goes there.
A global batch is ``batch_size`` windows split evenly over the workers, as with torchrun.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_parallel import demo_panel  # noqa: E402  the torchrun example's panel

#: the ``--tiny`` network: seconds to fit, dropout off so that the ranks' steps are deterministic
TINY = dict(h=4, input_size=8, patch_len=2, d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0,
            val_size=4, random_state=3)
#: the folder of the fitted model inside the Ray checkpoint
MODEL_FOLDER = "model"


def forecaster_params(args) -> dict:
    """The TransformerForecaster's parameters for the parsed command line."""
    network = TINY if args.tiny else dict(h=24, input_size=96, random_state=0)
    return {**network, "batch_size": args.batch_size, "max_epochs": args.max_epochs,
            "trainer": {"accelerator": args.accelerator, "num_threads": args.num_threads}}


def train_loop_per_worker(config: dict) -> None:
    """One Ray Train worker: ``fit`` joins Ray's process group; rank 0 saves the fitted model
    into a Ray checkpoint, which Ray copies to the run's storage path with the fit's numbers."""
    import ray.train

    from tsrsa import TransformerForecaster
    from tsrsa.training.distributed import plan_placement

    model = TransformerForecaster(**config["params"])
    trainer = model.resolved_trainer
    placement = plan_placement(trainer.strategy, trainer.accelerator, trainer.devices)  # what fit will do: "join"
    began = time.perf_counter()
    model.fit(config["frame"])
    seconds = time.perf_counter() - began
    history = model.fit_history_
    metrics = {"fit_seconds": seconds, "placement": placement.mode, "world_size": placement.world_size,
               "val_loss": float(history["val_loss"].iloc[-1])}
    with tempfile.TemporaryDirectory(prefix="tsrsa-rank-") as folder:
        checkpoint = None
        if ray.train.get_context().get_world_rank() == 0:  # every rank holds the same model
            model.save(Path(folder) / MODEL_FOLDER)
            checkpoint = ray.train.Checkpoint.from_directory(folder)
        ray.train.report(metrics, checkpoint=checkpoint)  # every rank reports: Ray waits for all


def parse(argv=None):
    p = argparse.ArgumentParser(description="Train one TransformerForecaster data-parallel under Ray Train.")
    p.add_argument("--workers", type=int, default=2, help="Ray Train workers, one rank (and one device) each")
    p.add_argument("--accelerator", default="cpu", choices=("cpu", "gpu"),
                   help="cpu (default) or gpu: one GPU per worker (ScalingConfig use_gpu=True)")
    p.add_argument("--batch-size", type=int, default=256, help="global batch, split over the ranks")
    p.add_argument("--max-epochs", type=int, default=2)
    p.add_argument("--num-threads", type=int, default=1, help="CPU threads of each worker")
    p.add_argument("--tiny", action="store_true",
                   help="a seconds-long smoke run: small demo panel and network, dropout off")
    p.add_argument("--output-dir", type=Path, default=None, help="the fitted model is saved here")
    p.add_argument("--storage-path", default=None,
                   help="folder for Ray's run records and checkpoint (default: a temporary folder, removed "
                        "afterwards); with several machines, one that every machine sees")
    p.add_argument("--address", default=None,
                   help="a running Ray cluster to join ('auto' or HOST:PORT); default: start Ray here")
    p.add_argument("--verbose", action="store_true", help="show Ray's and the workers' log lines")
    args = p.parse_args(argv)
    for name in ("workers", "batch_size", "max_epochs", "num_threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    return args


def main(argv=None):
    """Run the Ray Train job; returns the fitted forecaster (rank 0's, read back from its checkpoint)."""
    import logging

    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    import tsrsa

    args = parse(argv)
    frame = demo_panel(n_series=3, length=60) if args.tiny else demo_panel()
    quiet = dict(log_to_driver=args.verbose, logging_level=logging.INFO if args.verbose else logging.ERROR)
    if args.address is None:  # Ray on this machine: a CPU per worker, no dashboard
        ray.init(num_cpus=args.workers, include_dashboard=False, **quiet)
    else:
        ray.init(address=args.address, **quiet)
    try:
        with tempfile.TemporaryDirectory(prefix="tsrsa-ray-") as scratch:
            storage = args.storage_path or scratch
            if "://" not in storage:  # a local folder (a bucket URI goes to Ray as it is)
                storage = str(Path(storage).resolve())
            trainer = TorchTrainer(
                train_loop_per_worker,
                train_loop_config={"params": forecaster_params(args), "frame": frame},
                scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=args.accelerator == "gpu"),
                run_config=RunConfig(storage_path=storage),
            )
            began = time.perf_counter()
            result = trainer.fit()
            seconds = time.perf_counter() - began
            with result.checkpoint.as_directory() as folder:
                model = tsrsa.load(Path(folder) / MODEL_FOLDER)
    finally:
        ray.shutdown()
    print(model.fit_history_.to_string(index=False))
    metrics = result.metrics
    how = (f"data-parallel over {metrics['world_size']} ranks" if metrics["placement"] == "join"
           else "in one process")  # one worker: a plain fit, there is no group of several to join
    print(f"fit in {metrics['fit_seconds']:.1f} s, {how} ({seconds:.1f} s with Ray's worker start-up)")
    if args.output_dir is not None:
        model.save(args.output_dir, overwrite=True)  # a second run replaces the model it saved
        print(f"model saved to {args.output_dir}")
    return model


if __name__ == "__main__":
    main()
