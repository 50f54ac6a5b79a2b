"""M3 sample: one model per series, tsrsa's forecasters at their defaults against the statistical ones.

    python benchmarks/m3_defaults.py --draw-sample            # (re)write configs/m3_sample.csv
    python benchmarks/m3_defaults.py --models RSA,ETS --series-limit 60 --seeds 0
    python benchmarks/m3_defaults.py --models RSA --variant gate_init=0 -p gate_init=0.0
    python benchmarks/m3_defaults.py --summary [--reference defaults-0.13.0]

The protocol (sample, origins, scores) is ``tsrsa/benchmarking/m3_sample.py``. The networks get only
``h``, ``random_state`` (the seed) and ``num_threads=1`` (in ``trainer`` from tsrsa 0.15 on, named on its own
in the rows for every release: ``tsrsa.benchmarking.compat``), the statistical models ``h`` and the season;
``-p name=value`` adds a parameter (a JSON value, else a string) to every selected model that takes
it, and ``--variant`` names the configuration in the rows. Rows already in ``--output`` (same variant,
model, series, origin and seed) are skipped, so a stopped run resumes.

To run against an installed or frozen release of tsrsa that lacks the harness, put that release first
on ``PYTHONPATH``: the script then loads the harness modules from this checkout by path, and the rows
record the version and commit of the package that was imported.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "configs" / "m3_sample.csv"
OUTPUT = HERE / "results" / "m3_sample.csv"
DEFAULT_VARIANT = "defaults"


def harness_module(name: str):
    """``tsrsa.benchmarking.<name>`` of the package imported, else the file of this checkout."""
    try:
        return importlib.import_module(f"tsrsa.benchmarking.{name}")
    except ModuleNotFoundError:
        path = HERE.parent / "tsrsa" / "benchmarking" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"m3_harness_{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module


def data_folder(given: str | None) -> Path:
    """The folder holding ``M3-info.csv``: ``--data-dir``, else ``$TSRSA_DATA_DIR/m3``, else
    ``shared/datasets/m3`` beside the checkout."""
    import os

    if given:
        return Path(given)
    if os.environ.get("TSRSA_DATA_DIR"):
        return Path(os.environ["TSRSA_DATA_DIR"]) / "m3"
    return HERE.parent.parent / "shared" / "datasets" / "m3"


def parse_param(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"-p takes name=value, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def origin_names(text: str) -> list[str]:
    """``--origins`` as the harness's names, "validation" standing for val1 and val2."""
    names = [o for o in text.split(",") if o]
    return list(dict.fromkeys(n for o in names for n in (("val1", "val2") if o == "validation" else (o,))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="RSA,Transformer,LSTM,DLinear,ETS,SeasonalNaive",
                        help="comma-separated, of RSA, Transformer, LSTM, DLinear, ETS, ARIMA, Theta, SeasonalNaive")
    parser.add_argument("--series-limit", type=int, help="the first k series of the sample")
    parser.add_argument("--origins", default="val1,val2,test",
                        help="comma-separated, of val1, val2, test; validation = val1,val2")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds of the networks")
    parser.add_argument("--variant", default=DEFAULT_VARIANT, help="the name of the configuration in the rows")
    parser.add_argument("-p", dest="params", action="append", type=parse_param, default=[],
                        metavar="NAME=VALUE", help="a constructor parameter of the variant (repeatable)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--data-dir", help="the folder holding the M3 files (M3-info.csv, M3-monthly.csv, ...)")
    parser.add_argument("--draw-sample", action="store_true", help="draw the sample and write --sample")
    parser.add_argument("--summary", action="store_true", help="print the summary of --output and stop")
    parser.add_argument("--reference", help="the variant the others are divided by in --summary")
    parser.add_argument("--reference-model", default="ETS", help="the model the others are divided by")
    args = parser.parse_args(argv)
    m3 = harness_module("m3_sample")

    if args.draw_sample:
        sample = m3.draw_sample(m3.read_info(data_folder(args.data_dir)))
        args.sample.parent.mkdir(parents=True, exist_ok=True)
        sample.to_csv(args.sample, index=False)
        print(f"{args.sample}: {len(sample)} series, seed {m3.SAMPLE_SEED}")
        print(sample.groupby(["subset", "category"]).size().to_string())
        return
    if args.summary:
        summary = harness_module("m3_summary")
        print(summary.render(summary.read_rows(args.output), args.reference, args.reference_model))
        return

    import tsrsa
    import torch

    torch.set_num_threads(1)
    sample = m3.read_sample(args.sample)
    if args.series_limit is not None:
        sample = sample.iloc[:args.series_limit]
    series = m3.read_series(data_folder(args.data_dir), sample)
    print(f"tsrsa {tsrsa.__version__} from {Path(tsrsa.__file__).parent}; {len(sample)} series -> {args.output}",
          flush=True)
    written = m3.run(sample, series, [m for m in args.models.split(",") if m],
                     origin_names(args.origins), [int(s) for s in args.seeds.split(",") if s],
                     args.variant, dict(args.params), args.output, log=lambda text: print(text, flush=True))
    print(f"{written} rows written", flush=True)


if __name__ == "__main__":
    main()
