"""The ``tsrsa`` command: fit and predict on CSV files, and run the long-horizon benchmark.

    tsrsa fit --model RSA --h 24 --input train.csv --output model_dir --param max_epochs=10
    tsrsa predict --model-dir model_dir --output forecast.csv
    tsrsa benchmark --dataset ETTh1 --models DLinear --seeds 0,1,2

Input files are CSV, long (columns ``unique_id``, ``ds``, ``y``; rename them with ``--id-col``,
``--time-col``, ``--target-col``) or wide (a time column and one numeric column per series,
such as the ETT files with ``--time-col date``). Forecasts are written as a long CSV in the
same column names. A problem with the user's files or flags, or a saved model that is edited or
inconsistent, ends the command with a one-line message on stderr and exit status 2, never a
traceback; a write the system refuses (no space, no permission) gives one line and status 1. Files
are written all or nothing: a command that fails leaves no partial model folder or forecast file.

Only the standard library is imported here; pandas, torch and the forecasters load when a
command runs, so ``tsrsa --help`` is instant and ``import tsrsa.cli`` stays light.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from tsrsa._version import __version__
from tsrsa.cli.files import CommandError, check_output_folder, read_csv, read_future, write_csv
from tsrsa.cli.models import MODELS, model_class_name, model_set_params, series_count

#: constructor arguments with a flag of their own (not settable with --param)
_FLAGS = {"h": "--h", "input_size": "--input-size", "max_epochs": "--max-epochs", "random_state": "--random-state",
          "verbose": "--verbose", "id_col": "--id-col", "time_col": "--time-col", "target_col": "--target-col",
          "freq": "--freq", "fill": "--fill"}

#: exit status of a usage or input error (argparse's own)
USAGE_ERROR = 2


# ---------------------------------------------------------------------- parsing helpers
def _param(text: str) -> tuple[str, object]:
    """``key=value`` -> (key, value); the value is read as JSON (numbers, true/false/null,
    lists) where it parses, as None/True/False in Python spelling, else kept as a string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not key=value (e.g. --param max_epochs=10 or --param quantiles=[0.1,0.9])")
    return key, _value(raw.strip())


def _value(raw: str):
    python = {"None": None, "True": True, "False": False}
    if raw in python:
        return python[raw]
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _freq(text: str):
    """A pandas alias ("h", "15min", "MS") or an integer step ("1", "7")."""
    return int(text) if text.lstrip("-").isdigit() else text


# ---------------------------------------------------------------------- the parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tsrsa`` command (sub-commands fit, predict, benchmark)."""
    parser = argparse.ArgumentParser(
        prog="tsrsa",
        description="Time-series forecasting with transformers that carry recurrence (RSA). "
                    "Fit a forecaster on a CSV file, forecast from a saved one, or run the "
                    "long-horizon benchmark.",
        epilog="Run 'tsrsa COMMAND --help' for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"tsrsa {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    fit = commands.add_parser(
        "fit", help="fit a forecaster on a CSV file and save it to a folder",
        description="Fit a forecaster on the series of a CSV file and save it to a folder that\n"
                    "'tsrsa predict' (or tsrsa.load in Python) reads. The file is long (one row per\n"
                    "series and time step: id, time and value columns) or wide (a time column and\n"
                    "one numeric column per series).",
        epilog="Examples:\n"
               "  tsrsa fit --model RSA --h 24 --input train.csv --output model\n"
               "  tsrsa fit --model DLinear --h 96 --input ETTh1.csv --time-col date \\\n"
               "            --output etth1_model -p max_epochs=10 -p kernel_size=25\n"
               "  tsrsa fit --model Auto --h 18 --input m3.csv --output auto \\\n"
               "            -p 'models=[\"ETS\",\"ARIMA\",\"Theta\"]'\n"
               "  tsrsa fit --model Multi --h 18 --input m3.csv --output many \\\n"
               "            -p 'models={\"ets\": \"ETS\", \"theta\": \"Theta\"}' -p season_length=12\n\n"
               "Auto and Multi take their models by the names of --model (a list, or a dict\n"
               "name -> model), each built at its defaults with this command's --h, column,\n"
               "--freq, --fill, --input-size, --max-epochs, --random-state flags and\n"
               "-p season_length where it takes them; Auto without -p models has its default\n"
               "candidates (statistical and neural).\n\n"
               "Any constructor argument of the estimator can be set with --param (-p); see\n"
               "help(tsrsa.RSAForecaster) in Python for the list and their meaning.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("--model", type=model_class_name, default="RSAForecaster",
                     help=f"estimator: {', '.join(MODELS)} (default RSA)")
    fit.add_argument("--h", type=int, required=True, help="forecast horizon in time steps")
    fit.add_argument("--input", required=True, type=Path, help="training data (CSV)")
    fit.add_argument("--output", required=True, type=Path, help="folder the fitted model is saved to")
    fit.add_argument("--input-size", type=int, help="look-back window in steps (neural models; default: two horizons "
                     "and at least one season of the frequency, shorter on short series: docs/fit_plan.md)")
    fit.add_argument("--max-epochs", type=int, help="training epochs (neural models; default: scaled to the data, 10 to 100)")
    fit.add_argument("--random-state", type=int, help="seed: the same file and seed give the same model")
    fit.add_argument("--param", "-p", type=_param, action="append", default=[], metavar="KEY=VALUE",
                     help="any other constructor argument, e.g. -p patch_len=8 -p loss=quantile "
                          "-p quantiles=[0.1,0.9] (repeatable; values read as JSON)")
    fit.add_argument("--overwrite", action="store_true",
                     help="replace the model saved in --output (a folder that holds other files is never "
                          "written into)")
    fit.add_argument("--verbose", action="store_true", help="show a training progress bar")
    fit.add_argument("--quiet", action="store_true", help="print nothing on success")
    _data_flags(fit)
    fit.set_defaults(run=_run_fit)

    predict = commands.add_parser(
        "predict", help="forecast with a saved model and write the forecast as CSV",
        description="Forecast with a model saved by 'tsrsa fit' (or Forecaster.save) and write a\n"
                    "long CSV: id, time, yhat (and yhat_q.. columns for quantile models, yhat_lo_../\n"
                    "yhat_hi_.. with --level for a model fitted with -p conformal_windows=k). Without\n"
                    "--input the model forecasts after the end of its training data; with --input,\n"
                    "after the end of each series in that file (ids unseen in training allowed). With\n"
                    "--update, the rows of --input are new observations that continue each series\n"
                    "(Forecaster.update: no refit; a streaming model advances its state over them\n"
                    "alone); the model is written back to --model-dir, so the next call continues.",
        epilog="Examples:\n  tsrsa predict --model-dir model --input history.csv --output forecast.csv\n"
               "  tsrsa predict --model-dir model --input new_rows.csv --update --output forecast.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    predict.add_argument("--model-dir", required=True, type=Path, help="folder written by 'tsrsa fit'")
    predict.add_argument("--input", type=Path, help="history to forecast from (CSV; default: the training data)")
    predict.add_argument("--output", default="-",
                         help="forecast CSV to write ('-', the default, writes to stdout)")
    predict.add_argument("--future", type=Path,
                         help="known-future covariates (CSV: id, time and the model's future_covariates) for the "
                              "next --h steps of every series; needed by a model fitted with future_covariates")
    predict.add_argument("--h", type=int, help="steps to forecast (at most the trained horizon; default all)")
    predict.add_argument("--device", default="cpu", help="device to load the network on (default cpu)")
    predict.add_argument("--level", type=float, nargs="+", metavar="PERCENT",
                         help="conformal prediction intervals at these coverage percentages, e.g. --level 80 95 "
                              "(a model fitted with -p conformal_windows=k)")
    predict.add_argument("--update", action="store_true",
                         help="--input holds new observations after each series' saved end: take them in and "
                              "save the model back to --model-dir")
    predict.add_argument("--new-ids", choices=("raise", "add"),
                         help="with --update, ids of --input the model has not seen: an error (raise, the default) "
                              "or new series whose whole history is in --input (add)")
    predict.set_defaults(run=_run_predict)

    bench = commands.add_parser(
        "benchmark", add_help=False, prefix_chars="\0",  # every argument goes to the harness
        help="run the long-horizon benchmark (Time-Series-Library protocol) of tsrsa.benchmarking",
        description="Run the long-horizon benchmark; 'tsrsa benchmark --help' lists its options.")
    bench.add_argument("args", nargs=argparse.REMAINDER)
    bench.set_defaults(run=_run_benchmark)
    return parser


def _data_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("data")
    group.add_argument("--id-col", default="unique_id", help="series id column of a long file (default unique_id)")
    group.add_argument("--time-col", default="ds", help="time column (default ds; 'date' for the ETT files)")
    group.add_argument("--target-col", default="y", help="value column of a long file (default y)")
    group.add_argument("--freq", type=_freq,
                       help="frequency: pandas alias (h, 15min, D, MS) or integer step; inferred when left out")
    group.add_argument("--fill", choices=("ffill", "interpolate", "zero"),
                       help="fill missing timestamps and values (default: they are errors)")


# ---------------------------------------------------------------------- commands
def _run_fit(args) -> int:
    from tsrsa.forecasters import FORECASTERS, MODEL_SETS

    cls = {c.__name__: c for c in (*FORECASTERS, *MODEL_SETS)}[args.model]
    params = {"h": args.h, "id_col": args.id_col, "time_col": args.time_col, "target_col": args.target_col}
    for name in ("freq", "fill", "input_size", "max_epochs", "random_state"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    # an option of a group is taken by its nested name (-p trainer__num_threads=2, -p rem__n_cyclic=2) or, as
    # before, by its own (-p num_threads=2, -p start_weight=0.5) and folded into its group;
    # -p trainer={"num_threads": 2} says the same
    valid = [*cls.param_names(), *cls.moved_params,
             *(f"{group}__{field}" for group, kind in cls.option_groups.items() for field in kind.field_names())]
    if args.verbose and "verbose" in valid:  # the naive forecaster has nothing to show
        params["verbose"] = 1
    for key, value in args.param:
        if key in _FLAGS:
            raise CommandError(f"--param {key}=... has a flag of its own: use {_FLAGS[key]}")
        params[key] = value
    if getattr(cls, "saves_members", False):
        params = model_set_params(cls, params)
    unknown = [k for k in params if k not in valid]
    if unknown:
        from tsrsa.estimator.params import suggest_names

        hint = suggest_names(unknown[0], valid, value=params[unknown[0]], defaults=cls.param_defaults())
        if hint.startswith("did you mean"):
            hint = hint.replace("did you mean '", "did you mean -p ").replace("'?", "=...?").replace(
                "' or '", "=... or -p ")
        else:
            hint = f"its parameters are: {', '.join(valid)}"
        spelled = _FLAGS.get(unknown[0], f"-p {unknown[0]}=...")
        raise CommandError(f"{cls.__name__} has no parameter {unknown[0]!r} ({spelled}); {hint}")
    check_output_folder(args.output, args.overwrite)
    df = read_csv(args.input, id_col=args.id_col, time_col=args.time_col, target_col=args.target_col)
    model = cls(**cls.upgrade_params(params, nested=True))
    began = time.perf_counter()
    model.fit(df)
    seconds = time.perf_counter() - began
    model.save(args.output, overwrite=args.overwrite)
    if not args.quiet:
        print(f"{cls.__name__} fitted on {series_count(model)} series from {args.input} in {seconds:.1f} s; "
              f"saved to {args.output}")
    return 0


def _run_predict(args) -> int:
    import tsrsa

    if args.new_ids is not None and not args.update:
        raise CommandError("--new-ids says what --update does with ids the model has not seen; add --update, "
                           "or leave --new-ids out (a forecast from --input takes unseen ids as they are)")
    model = tsrsa.load(args.model_dir, device=args.device)
    df = None
    if args.input is not None:
        names = {"id_col": model.id_col, "time_col": model.time_col, "target_col": model.target_col}
        hint = (f"the model was fitted on columns id_col={model.id_col!r}, time_col={model.time_col!r}, "
                f"target_col={model.target_col!r} and reads new data in the same names")
        df = read_csv(args.input, **names, rename_hint=hint)
    elif args.update:
        raise CommandError("--update takes in the new observations of --input; give --input")
    future = None
    if args.future is not None:
        future = read_future(args.future, model)
    if args.output != "-":
        out = Path(args.output)
        if out.is_dir():
            raise CommandError(f"--output {out} is a folder; give a file name such as {out / 'forecast.csv'}")
        if not out.parent.is_dir():
            raise CommandError(f"the folder {out.parent} of --output does not exist")
    if args.update:
        try:
            model.update(df, new_ids=args.new_ids or "raise")
        except ValueError as err:  # the library's advice, in the command line's spelling
            raise CommandError(str(err).replace("pass new_ids='add'", "pass --new-ids add")) from None
        forecast = model.predict(args.h, future_df=future, level=args.level)
        _save_and_write(model, args.model_dir, forecast, args.output)
    else:
        forecast = model.predict(args.h, df=df, future_df=future, level=args.level)
        _write_forecast(forecast, args.output)
    return 0


def _write_forecast(forecast, output: str) -> None:
    if output == "-":
        forecast.to_csv(sys.stdout, index=False)
    else:
        write_csv(forecast, Path(output))


def _save_and_write(model, model_dir: Path, forecast, output: str) -> None:
    """Save the updated model back to ``model_dir`` and write its forecast, together: the forecast file is
    put in place only once the model is saved, so that a failure of either leaves both as they were."""
    if output == "-":
        model.save(model_dir, overwrite=True)
        _write_forecast(forecast, output)
    else:
        write_csv(forecast, Path(output), before_replace=lambda: model.save(model_dir, overwrite=True))


def _run_benchmark(args) -> int:
    """Hand the arguments to the harness of ``tsrsa.benchmarking.cli`` (``benchmarks/ltsf.py``'s)."""
    from tsrsa.benchmarking import cli as harness

    argv = list(args.args)
    root = Path("benchmarks")  # results and configurations of a checkout, as benchmarks/ltsf.py uses
    parser = harness.parser(root)
    parser.prog = "tsrsa benchmark"
    parser.description = (
        "Long-horizon benchmark (Time-Series-Library protocol, tsrsa.benchmarking): fit each configured "
        "model on each data set, horizon and seed, score every test window, append one row per run to "
        "benchmarks/results/ltsf.csv and regenerate the tables of benchmarks/RESULTS.md. Model "
        "configurations are read from ./benchmarks/configs (run it from a tsrsa checkout) or --config-dir; "
        "data files from --data-dir or $TSRSA_DATA_DIR.")
    parser.epilog = ("Example: tsrsa benchmark --dataset ETTh1 --models DLinear --horizons 96 "
                     "--max-windows 64 --max-epochs 1   (a smoke run; writes nothing unless --results is given)")
    options = parser.parse_args(argv)  # --help and malformed flags end here, under this name
    if not options.tables_only and (not options.dataset or not options.models):
        parser.error("--dataset and --models are required (or --tables-only)")
    if not options.config_dir.is_dir():
        raise CommandError(
            f"no model configurations at {options.config_dir}: run 'tsrsa benchmark' from a tsrsa checkout "
            f"(it reads benchmarks/configs) or give --config-dir")
    harness.main(argv, root=root)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``tsrsa`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Errors in the flags, files or saved model print one line on stderr and return 2 (1 for a write
    the system refuses); ``--help`` returns 0.

    Examples
    --------
    >>> from tsrsa.cli import build_parser
    >>> args = build_parser().parse_args(["fit", "--model", "rsa", "--h", "24", "--input", "a.csv",
    ...                                   "--output", "m", "-p", "patch_len=8", "-p", "loss=huber"])
    >>> args.model, args.param
    ('RSAForecaster', [('patch_len', 8), ('loss', 'huber')])
    """
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as stop:  # --help, --version, or a malformed command line (already printed)
        return _status(stop)
    where = f"tsrsa {args.command}"
    try:
        return args.run(args)
    except SystemExit as stop:  # the benchmark's own argument parser
        return _status(stop)
    except CommandError as err:
        print(f"{where}: error: {err}", file=sys.stderr)
    except (ValueError, TypeError) as err:  # the library's checks of data and parameters
        message = " ".join(str(err).split())
        print(f"{where}: error: {_in_flags(message, args.command)}", file=sys.stderr)
    except FloatingPointError as err:
        print(f"{where}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (tsrsa predict | head): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout at exit
        return 1
    except OSError as err:  # the disk or the system refused a read or a write; nothing half-written is left
        message = " ".join(str(err).split())
        print(f"{where}: error: {message}", file=sys.stderr)
        return 1
    return USAGE_ERROR


def _in_flags(message: str, command: str) -> str:
    """A library message in the spelling of ``command``'s flags (:mod:`tsrsa.cli.messages`)."""
    if command not in ("fit", "predict"):
        return message
    from tsrsa.cli.messages import as_flags
    from tsrsa.forecasters import FORECASTERS

    return as_flags(message, command, {name for cls in FORECASTERS for name in (*cls.param_names(), *cls.moved_params)})


def _status(stop: SystemExit) -> int:
    code = stop.code
    return code if isinstance(code, int) else (0 if code is None else 1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
