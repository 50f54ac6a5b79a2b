"""The library's messages in the command line's spelling: flags, not Python arguments.

A check of the library names what to change as Python spells it (``pass fill='ffill'``,
``level=[80, 95]``, ``conformal_windows=k``); the ``tsrsa`` command prints the same advice as its
flags (``--fill ffill``, ``--level 80 95``, ``-p conformal_windows=k``). In ``tsrsa predict`` a
parameter of the model is fixed when it was fitted: its flag is named as one of ``tsrsa fit``.

Only the standard library is imported here.
"""
from __future__ import annotations

import re

#: constructor arguments with a flag of their own in ``tsrsa fit`` (the others are set with ``-p name=value``)
FIT_FLAGS = {"h": "--h", "input_size": "--input-size", "max_epochs": "--max-epochs", "random_state": "--random-state",
             "verbose": "--verbose", "id_col": "--id-col", "time_col": "--time-col", "target_col": "--target-col",
             "freq": "--freq", "fill": "--fill", "overwrite": "--overwrite"}
#: arguments of a forecast with a flag of ``tsrsa predict``
PREDICT_FLAGS = {"h": "--h", "level": "--level", "device": "--device", "new_ids": "--new-ids",
                 "df": "--input", "future_df": "--future"}
#: flags that take no value
SWITCHES = {"--overwrite", "--verbose", "--update"}

_QUOTED = r"'[^']*'|\"[^\"]*\""
_VALUE = rf"(?:{_QUOTED})(?:(?:, | or |, or )(?:{_QUOTED}))*|\[[^\]]*\]|\([^()]*\)|[^\s,;:()\[\]]+"
_ARGUMENT = re.compile(rf"(?<![\w.\-])([a-z_][a-z0-9_]*)=({_VALUE})?")
#: parameter names that are flags when they stand alone in a message ("leave freq out"); words such as
#: "fill" or "h" are left alone, as they also mean what they say in English
BARE = ("input_size", "max_epochs", "random_state", "id_col", "time_col", "target_col", "new_ids", "freq")
_BARE = re.compile(rf"(?<![\w.\-'\"=])({'|'.join(BARE)})(?![\w=])")


def _plain(value: str) -> str:
    """A Python value as typed after a flag: quotes dropped, a list as its items."""
    if value.startswith("["):
        return " ".join(item.strip().strip("'\"") for item in value[1:-1].split(",") if item.strip())
    return re.sub(_QUOTED, lambda m: m.group(0)[1:-1], value)


def _json(value: str) -> str:
    """A Python value as ``-p name=value`` reads it (JSON or text): quotes dropped, a tuple as a list."""
    if value.startswith("("):
        return "[" + value[1:-1].replace(" ", "") + "]"
    return value.replace(" ", "") if value.startswith("[") else _plain(value)


def as_flags(message: str, command: str, params) -> str:
    """``message`` with every ``name=value`` of a parameter in ``params`` (the estimators' constructor
    arguments) or of the command's own flags written as the flag of ``command`` ("fit" or "predict")."""
    params = set(params)
    flags = FIT_FLAGS if command == "fit" else PREDICT_FLAGS
    of_fit = []  # flags of tsrsa fit named in a message of tsrsa predict

    def flag(match: re.Match) -> str:
        name, value = match.group(1), match.group(2)
        own = flags.get(name)
        if own is None and name not in params:
            return match.group(0)
        if own is None and command == "predict" and name in FIT_FLAGS:
            own = FIT_FLAGS[name]
        if own is None:  # an estimator argument without a flag: -p, its value as JSON or text
            text = f"-p {name}={_json(value) if value else '...'}"
        elif own in SWITCHES:
            text = own
        else:
            text = f"{own} {_plain(value)}" if value else own
        if command == "predict" and name not in PREDICT_FLAGS:
            of_fit.append(text.split("=")[0].split(" ")[0] + (f" {name}" if own is None else ""))
        return text

    def bare(match: re.Match) -> str:
        name = match.group(1)
        own = flags.get(name) or (FIT_FLAGS.get(name) if command == "predict" else None)
        if own is None:
            return name
        if command == "predict" and name not in PREDICT_FLAGS:
            of_fit.append(own)
        return own

    out = _BARE.sub(bare, _ARGUMENT.sub(flag, message))
    if of_fit:
        named = ", ".join(dict.fromkeys(of_fit))
        out += f" ({named}: {'a flag' if len(of_fit) == 1 else 'flags'} of tsrsa fit, which fitted the model)"
    return out
