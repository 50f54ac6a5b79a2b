"""How much memory one call may build: its estimate, made before anything is allocated, and the limit.

The calls whose size the caller chooses with one number -- ``sample(n)``, ``predict(level=[...])``
over many levels, ``make_future_frame`` and ``cross_validate(n_windows=...)`` -- estimate the bytes
of what they are about to build (the arrays and the frame they return, with the copies on the way)
and refuse, with a ValueError that names the estimate, the limit and what to lower, a request above
the limit: 8 GiB by default. The environment variable ``TSRSA_MAX_REQUEST_BYTES`` sets another limit,
read at every call: a number of bytes, optionally with a unit (``TSRSA_MAX_REQUEST_BYTES=64GiB``,
``500MB``, ``2e10``); ``0`` or ``none`` lifts it. A request under the limit may still be more than
the machine has: the limit guards against a typing slip (``sample(10**9)``), not against every
shortage of memory.
"""
from __future__ import annotations

import os
import re

#: the environment variable that sets the limit
MAX_REQUEST_ENV = "TSRSA_MAX_REQUEST_BYTES"
#: the limit when the variable is not set: 8 GiB
DEFAULT_MAX_REQUEST_BYTES = 8 * 2 ** 30

_UNITS = {"": 1, "b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}
_SETTING = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:e[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def request_limit() -> int | None:
    """The most bytes one request may build (None: no limit), from ``TSRSA_MAX_REQUEST_BYTES``.

    Raises
    ------
    ValueError
        When the variable holds something that is not a size.
    """
    raw = os.environ.get(MAX_REQUEST_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_REQUEST_BYTES
    if raw.strip().lower() in ("0", "none", "off"):
        return None
    match = _SETTING.match(raw)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"the environment variable {MAX_REQUEST_ENV}={raw!r} is not a size; set it to a number "
                         f"of bytes with an optional unit, e.g. {MAX_REQUEST_ENV}=64GiB or 500MB, 0 for no limit")
    return int(float(match.group(1)) * _UNITS[unit])


def format_bytes(n: int) -> str:
    """``n`` bytes as people read them: '89.4 GiB', '512 MiB', '300 bytes'."""
    n = int(n)
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def check_request_size(call: str, n_bytes: int, what: str, fix: str) -> None:
    """ValueError when ``call`` (e.g. "sample(n=10**9)") would build ``what`` (e.g. "1e9 rows") of about
    ``n_bytes``, above :func:`request_limit`; ``fix`` says what to lower. Nothing is allocated here."""
    limit = request_limit()
    if limit is None or int(n_bytes) <= limit:
        return
    raise ValueError(f"{call} would build {what}, about {format_bytes(n_bytes)} in memory, above the limit of "
                     f"{format_bytes(limit)} for one request: {fix}; or, if this machine has the memory, raise the "
                     f"limit with the environment variable {MAX_REQUEST_ENV} (e.g. {MAX_REQUEST_ENV}=64GiB; 0 for "
                     f"none)")
