"""The files of the ``tsrsa`` command: the user's CSVs read into frames, the output folder checked,
forecasts written all or nothing.

Every problem is a :class:`CommandError` naming the file and what to change; pandas loads only
when a file is read.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import warnings
from pathlib import Path


class CommandError(Exception):
    """A problem with the user's flags or files: printed as one line, exit status 2."""


def read_csv(path: Path, *, id_col: str, time_col: str, target_col: str,
             rename_hint: str = "name yours with --id-col, --time-col, --target-col"):
    """A user's CSV as the frame a forecaster takes: long when it has ``id_col``, else wide
    (indexed by ``time_col``). Raises CommandError naming the file and what to change."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise CommandError(f"input file {path} does not exist")
    if not path.is_file():
        raise CommandError(f"input {path} is not a file")
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise CommandError(f"{path} is empty: expected a CSV file with a header row") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CommandError(f"{path} is not a readable CSV file ({reason})") from None
    columns = [str(c) for c in df.columns]
    if len(df) == 0:
        raise CommandError(f"{path} has a header but no rows")
    if id_col in columns:
        missing = [c for c in (time_col, target_col) if c not in columns]
        if missing:
            raise CommandError(
                f"{path} has the id column {id_col!r} but lacks {missing} (its columns: {_shown(columns)}); "
                f"{rename_hint}")
        return df.assign(**{time_col: _parse_time(df[time_col], path, time_col)})
    if time_col not in columns:
        timelike = [c for c in columns if c.lower() in ("date", "datetime", "time", "timestamp", "ds")]
        hint = f" (for a wide file whose time is in {timelike[0]!r}: --time-col {timelike[0]})" if timelike else ""
        raise CommandError(
            f"{path} has neither an id column {id_col!r} (long file) nor a time column {time_col!r} "
            f"(wide file); its columns are {_shown(columns)}: {rename_hint}{hint}")
    wide = df.assign(**{time_col: _parse_time(df[time_col], path, time_col)}).set_index(time_col)
    text = [c for c in wide.columns if not pd.api.types.is_numeric_dtype(wide[c].dtype)]
    if text:
        raise CommandError(
            f"{path} is read as wide (no id column {id_col!r}), so every column but {time_col!r} must be "
            f"numeric, but {_shown(text)} hold text; for a long file, {rename_hint}")
    if wide.shape[1] == 0:
        raise CommandError(f"{path} has a time column {time_col!r} but no series columns")
    return wide


def _parse_time(values, path: Path, column: str):
    """Integers stay integers; anything else must parse as timestamps."""
    import pandas as pd

    if pd.api.types.is_integer_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values
    if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        raise CommandError(
            f"column {column!r} of {path} holds numbers that are not whole (or has empty cells); times must be "
            f"dates or whole numbers, in every row")
    try:
        with warnings.catch_warnings():  # pandas' note on per-element parsing: the error below says more
            warnings.simplefilter("ignore")
            return pd.to_datetime(values)
    except (ValueError, TypeError, OverflowError) as err:
        first = str(err).splitlines()[0]
        raise CommandError(
            f"column {column!r} of {path} holds values that are neither timestamps nor whole numbers ({first})"
        ) from None


def _shown(items: list, limit: int = 8) -> str:
    head = ", ".join(repr(i) for i in items[:limit])
    return f"[{head}{', ...' if len(items) > limit else ''}]"


def check_output_folder(path: Path, overwrite: bool) -> None:
    """Refuse an --output folder the model may not be saved in (before a fit spends any time): a
    file, a folder that holds anything but a saved tsrsa model, or a saved model without --overwrite."""
    from tsrsa.estimator.model_folder import check_destination

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise CommandError(f"--output {path} is a file; give a folder to save the model in")
    if not path.exists() and not path.parent.is_dir():
        raise CommandError(f"the folder {path.parent} of --output does not exist")
    try:
        check_destination(path, overwrite=overwrite)
    except ValueError as err:
        raise CommandError(f"--output {str(err).replace('overwrite=True', '--overwrite')}") from None


def write_csv(frame, path: Path, *, before_replace=None) -> None:
    """Write ``frame`` to the CSV file ``path`` all or nothing: into a hidden file beside it, renamed over
    ``path`` at the end, so that a write that fails leaves ``path`` as it was and nothing else behind.
    ``before_replace()``, when given, runs once the file is written and before it is put in place (the
    model an update saves): when it raises, ``path`` is left as it was too."""
    path = Path(path)
    staging = path.with_name(f".{path.name}.tsrsa-{secrets.token_hex(4)}")
    try:
        frame.to_csv(staging, index=False)
        if before_replace is not None:
            before_replace()
        os.replace(staging, path)
    except BaseException:
        with contextlib.suppress(OSError):
            staging.unlink()
        raise


def read_future(path: Path, model):
    """The --future file: a long CSV with the model's id and time columns and its known-future covariates."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise CommandError(f"--future {path} is not a file")
    try:
        future = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        raise CommandError(f"--future {path} is not a readable CSV file ({str(err).splitlines()[0]})") from None
    missing = [c for c in (model.id_col, model.time_col) if c not in future.columns]
    if missing:
        raise CommandError(f"--future {path} lacks the column(s) {missing}; it needs the model's id and time "
                           f"columns and its future covariates {list(model.declared_covariates().future)}")
    return future.assign(**{model.time_col: _parse_time(future[model.time_col], path, model.time_col)})
