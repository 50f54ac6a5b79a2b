"""RSAForecaster's REM heads and their start, in one argument: ``rem=tsrsa.REM(...)`` (or a dict of its fields)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tsrsa.estimator.option_groups import OptionGroup
from tsrsa.estimator.params import check_bool, check_choice, check_float, check_int
from tsrsa.nn.rem import REM_MASKS
from tsrsa.nn.rsa import GATES
from tsrsa.training.budget import AUTO

#: the ways to start the REM heads (``REM(init=...)``), besides a dict of values
REM_INITS = ("data", "start", "paper")
#: the keys of a dict of initial values
INIT_KEYS = ("lambda", "gamma", "theta", "gate")
#: the fields whose name in the attention layer (``tsrsa.nn.rsa.RSAAttention``) differs
LAYER_NAMES = {"mask": "rem_mask"}


@dataclass(frozen=True, repr=False)
class REM(OptionGroup):
    """The Recurrence Encoding Matrix heads of :class:`~tsrsa.RSAForecaster` and how they start: ``rem=``.

    The heads of each layer are allocated in order: regular REM heads, cyclic pairs, dilated regular
    heads, dilated cyclic pairs, then plain softmax heads for the ``n_heads`` left over. REM lags count
    tokens (``patch_len`` steps each). Each option is checked when the REM is made; the allocation
    against ``n_heads`` and a dict of initial values against the heads are checked at ``fit``.

    Parameters
    ----------
    n_regular : int, default 1
        Regular REM heads per layer (lam ** l, an exponential decay).
    n_cyclic : int, default 1
        Cyclic REM head pairs per layer (gamma ** l cos/sin(theta l), a damped cycle); two heads each.
    n_dilated_regular : int, default 1
        Dilated regular heads (non-zero only at multiples of the dilation: a seasonal memory).
    n_dilated_cyclic : int, default 0
        Dilated cyclic pairs.
    dilations : int or list of int, optional
        Dilation in tokens of each dilated head or pair. None: from the seasonal periods of the
        training data with ``init="data"`` (round(period / patch_len)), else 2. Heads left over are
        plain softmax heads; the defaults fill the 4 default heads: 1 regular, 1 cyclic pair, 1
        dilated regular.
    gate : {"layer", "head"}, default "layer"
        One gate per layer, or one per REM head.
    share_cyclic : bool, default True
        The cos and sin heads of a pair share (gamma, theta).
    mask : {"causal", "bidirectional"}, default "causal"
        REMs over past tokens only (the recurrence), or over both directions. With ``causal=True``
        (and so with ``stream=True``) it must be "causal".
    max_lag : int, optional
        Zero every REM lag above it (tokens). None in the streaming configuration.
    gate_init : float or "auto", default "auto"
        Initial gate logit mu (sigmoid(0) = 0.5 mixes both branches equally). "auto": -2 (0.12 of
        the REM branch) in a fit of one series at the automatic budget (``max_epochs="auto"``), else 0
        (the fit plan's rule, :mod:`tsrsa.estimator.plan`).
    init : {"data", "start", "paper"} or dict, default "data"
        "data": start the REM heads from the training data -- AR roots give regular heads and
        cyclic pairs, seasonal periods give dilations and cycles (see ``tsrsa.init``); heads
        with no usable estimate keep the paper's values, and ``init_report_`` says which got
        what. "start": the same, from the fit of the statistical start (``start``): the roots of
        its autoregression (a first difference adds a unit root), or, for exponential smoothing,
        lam = 1 - alpha per step and the season of its seasonal form, decaying by 1 - gamma from
        one season to the next (:func:`tsrsa.start.fit.start_estimates`). "paper": the
        paper's initialisation (eta spread over +-[1, 2], nu over [1, 2], theta = pi/4). A dict sets
        values for every layer: keys "lambda", "gamma", "theta" (a number or one per regular head /
        cyclic parameter, per token) and "gate" (mu).
    learning_rate : float, optional
        AdamW step size of the REM values and gates (a few scalars per layer), without weight
        decay. None steps them at the forecaster's ``learning_rate`` like every other weight; at small
        rates (1e-4) they then stay close to where they started.

    Examples
    --------
    >>> from tsrsa import REM
    >>> REM(n_cyclic=2, gate="head")
    REM(n_cyclic=2, gate='head')
    >>> REM(mask="both")
    Traceback (most recent call last):
    ...
    ValueError: REM: mask='both' is not supported; use one of ('causal', 'bidirectional')
    """

    n_regular: int = 1  # regular heads per layer
    n_cyclic: int = 1  # cyclic pairs per layer (two heads each)
    n_dilated_regular: int = 1  # dilated regular heads: a seasonal memory
    n_dilated_cyclic: int = 0  # dilated cyclic pairs
    dilations: int | list | None = None  # tokens between a dilated head's lags (None: from the data)
    gate: str = "layer"  # one gate per layer, or per REM head
    share_cyclic: bool = True  # a pair's cos and sin heads share (gamma, theta)
    mask: str = "causal"  # past tokens only, or both directions
    max_lag: int | None = None  # REM lags above it are zero (tokens)
    gate_init: float | str = AUTO  # the gate logit at the start ("auto": the fit plan's rule)
    init: str | dict = "data"  # "data", "start", "paper" or a dict of values
    learning_rate: float | None = None  # the REM values' own step size (None: the forecaster's)

    def check(self) -> None:
        check_choice("gate", self.gate, GATES)
        check_bool("share_cyclic", self.share_cyclic)
        check_choice("mask", self.mask, REM_MASKS)
        check_int("max_lag", self.max_lag, allow_none=True)
        if not (isinstance(self.gate_init, str) and self.gate_init == AUTO):
            if isinstance(self.gate_init, str):
                raise TypeError(f'gate_init must be "auto" or a number, got {self.gate_init!r}')
            check_float("gate_init", self.gate_init, minimum=-math.inf)
        if isinstance(self.init, str):
            check_choice("init", self.init, REM_INITS)
        elif not isinstance(self.init, dict):
            raise TypeError(f"init must be one of {REM_INITS} or a dict of values, got {self.init!r}")
        else:
            unknown = set(self.init) - set(INIT_KEYS)
            if unknown:
                raise ValueError(f"init has unknown key(s) {sorted(unknown)}; use {INIT_KEYS}")
        check_float("learning_rate", self.learning_rate, strict=True, allow_none=True)

    @classmethod
    def example(cls) -> str:
        return 'tsrsa.REM(n_cyclic=2) or rem={"n_cyclic": 2}'

    def layer_options(self) -> dict:
        """The options of the "rsa" attention kind this REM sets, by the layer's names."""
        names = ("n_regular", "n_cyclic", "n_dilated_regular", "n_dilated_cyclic", "dilations", "gate",
                 "share_cyclic", "mask", "max_lag", "gate_init")
        return {LAYER_NAMES.get(name, name): getattr(self, name) for name in names}


__all__ = ["INIT_KEYS", "LAYER_NAMES", "REM", "REM_INITS"]
