"""RSAForecaster: the shared transformer backbone with Self-Attention with Recurrence."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tsrsa.estimator.common_params import COMMON_PARAMS_DOC, neural_init
from tsrsa.estimator.params import check_bool, check_choice, check_float, check_int
from tsrsa.estimator.plan import SINGLE_SERIES_GATE  # noqa: F401 (its old home)
from tsrsa.forecasters.transformer import TRANSFORMER_PARAMS, TransformerForecaster
from tsrsa.nn.ensemble import members_of
from tsrsa.nn.patches import n_tokens
from tsrsa.nn.rem import REM_MASKS, fold_angle
from tsrsa.nn.rsa import GATES, RSAAttention
from tsrsa.nn.rsa_heads import plan_heads
from tsrsa.nn.t2r import check_feature_size
from tsrsa.start.fit import start_estimates
from tsrsa.training.budget import AUTO

REM_INITS = ("data", "start", "paper")
_INIT_KEYS = ("lambda", "gamma", "theta", "gate")
_REPORT_COLUMNS = ["head", "rem_type", "source", "estimate", "lambda_init", "gamma_init", "theta_init",
                   "dilation", "note"]
#: the layer's options the estimator does not offer: the REM product's algorithm is chosen by length,
#: ALiBi by the configuration (``stream=True``)
_LAYER_ONLY = ("method", "alibi")
#: the options of the "rsa" kind that RSAForecaster takes as parameters of its own
KIND_OPTIONS = tuple(name for name in RSAAttention.option_defaults() if name not in _LAYER_ONLY)
#: where the estimator's defaults differ from the layer's, and why: one dilated regular head fills the
#: four default heads (1 regular, 1 cyclic pair, 1 dilated: a seasonal memory); the dilation comes from
#: the data's seasonal periods at fit (a layer built without data takes its own default, 2); the gate's
#: start follows the data (the fit plan's rule, :mod:`tsrsa.estimator.plan`)
ESTIMATOR_DEFAULTS = {"n_dilated_regular": 1, "dilations": None, "gate_init": AUTO}
#: RSAForecaster's own parameters and their defaults, after TransformerForecaster's ``readout_tokens``: the
#: kind's options with the layer's defaults but for ``ESTIMATOR_DEFAULTS``, and the data start after ``gate_init``
_LAYER = {name: ESTIMATOR_DEFAULTS.get(name, RSAAttention.option_defaults()[name]) for name in KIND_OPTIONS}
_AFTER = KIND_OPTIONS.index("gate_init") + 1
RSA_PARAMS = {**dict(list(_LAYER.items())[:_AFTER]), "rem_init": "data", "rem_learning_rate": None,
              **dict(list(_LAYER.items())[_AFTER:])}
#: RSAForecaster's own arguments, between ``input_size`` and the shared ones: the transformer's, without the
#: kind's name and options (``attention``, ``attention_options``: the kind is "rsa"), and RSA's after
#: ``readout_tokens``
_KIND = ("attention", "attention_options")
_READOUT = [name for name, _ in TRANSFORMER_PARAMS].index("readout_tokens") + 1
RSA_OWN_PARAMS = (*[(n, d) for n, d in TRANSFORMER_PARAMS[:_READOUT] if n not in _KIND], *RSA_PARAMS.items(),
                  *TRANSFORMER_PARAMS[_READOUT:])


def _automatic(value) -> bool:
    return isinstance(value, str) and value == AUTO


class RSAForecaster(TransformerForecaster):
    """Transformer whose heads carry recurrence: each REM head mixes softmax attention with a
    Recurrence Encoding Matrix through a learned gate (Huang et al., ICLR 2023).

    TransformerForecaster with the attention kind "rsa" (the same backbone, so the two differ in
    attention alone) and its parameters, plus what only RSA has: REM heads started from the data,
    ``explain()`` and ``plot_rem()``. REM lags count tokens (``patch_len`` steps each).

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    input_size : int, optional
        Look-back window in steps; None uses ``2 * h`` (at least one patch, ``patch_len``).
    d_model, n_heads, n_layers, d_ff, dropout, causal, revin, stream, readout_tokens, known_future
        As in TransformerForecaster. With ``causal=True`` (and so with ``stream=True``) both branches
        are causal: the softmax mask, and ``rem_mask`` must be "causal". In the streaming configuration
        each REM head advances by its recurrence, O(1) per token, ``max_lag`` must be None, and the
        softmax branch carries ALiBi relative positions (the kind's ``alibi`` option).
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
        training data with ``rem_init="data"`` (round(period / patch_len)), else 2. Heads left
        over are plain softmax heads; the defaults fill the 4 default heads: 1 regular, 1 cyclic
        pair, 1 dilated regular.
    gate : {"layer", "head"}, default "layer"
        One gate per layer, or one per REM head.
    share_cyclic : bool, default True
        The cos and sin heads of a pair share (gamma, theta).
    rem_mask : {"causal", "bidirectional"}, default "causal"
        REMs over past tokens only (the recurrence), or over both directions.
    max_lag : int, optional
        Zero every REM lag above it (tokens).
    gate_init : float or "auto", default "auto"
        Initial gate logit mu (sigmoid(0) = 0.5 mixes both branches equally). "auto": -2 (0.12 of
        the REM branch) in a fit of one series at the automatic budget (``max_epochs="auto"``), else 0.
    rem_init : {"data", "start", "paper"} or dict, default "data"
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
    rem_learning_rate : float, optional
        AdamW step size of the REM values and gates (a few scalars per layer), without weight
        decay. None steps them at ``learning_rate`` like every other weight; at small rates
        (1e-4) they then stay close to where they started.
    cache_size, cache_policy, cache_sinks : int or None, str, int; default None, "window", 4
        Streaming only: bound the softmax branch's key/value cache (each query attends to at most
        ``cache_size`` tokens; "window", "sinks", "h2o" or "tova" picks the token to drop); None keeps
        every token. See docs/streaming.md, "Bounded caches".
    t2r_features : int, optional
        Replace the softmax branch's exp(q·k / √d) by T2R's learned relu features of this size per
        head (Kasai et al. 2021): with ``stream=True`` both branches are then recurrences of fixed
        size. Usually set by ``tsrsa.convert.to_recurrent``, which finetunes a fitted softmax
        model into this form; None keeps softmax.
    {common}
    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import RSAForecaster
    >>> y = pd.Series(np.sin(np.arange(200) / 4), index=pd.date_range("2024-01-01", periods=200, freq="h"))
    >>> f = RSAForecaster(h=12, input_size=24, d_model=16, max_epochs=2, random_state=0).fit(y)
    >>> f.predict().shape
    (12, 3)
    >>> f.explain()[["layer", "head", "rem_type"]].head(4)
       layer  head    rem_type
    0      0     0     regular
    1      0     1  cyclic_cos
    2      0     2  cyclic_sin
    3      0     3     regular
    """

    __init__ = neural_init(RSA_OWN_PARAMS)

    # ------------------------------------------------------------------ checks and network
    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: the transformer's, the gate's start, the REM mask (unless the
        model is causal) and the REM values' own learning rate."""
        space = super().search_space(trial, estimator)
        if estimator is None:
            space.update(cls._searched_options(estimator, RSAAttention.search_space(trial)))
        return {**space, "rem_learning_rate": trial.suggest_float("rem_learning_rate", 1e-4, 3e-2, log=True)}

    @staticmethod
    def _searched_options(estimator, options: dict) -> dict:
        return dict(options)  # RSA's options are parameters of their own

    def attention_kind(self) -> type:
        return RSAAttention

    def _check_architecture(self) -> None:
        plan_heads(self.n_heads, **self._allocation())  # raises for impossible allocations
        check_choice("gate", self.gate, GATES)
        check_bool("share_cyclic", self.share_cyclic)
        check_choice("rem_mask", self.rem_mask, REM_MASKS)
        check_int("max_lag", self.max_lag, allow_none=True)
        if not _automatic(self.gate_init):
            if isinstance(self.gate_init, str):
                raise TypeError(f'gate_init must be "auto" or a number, got {self.gate_init!r}')
            check_float("gate_init", self.gate_init, minimum=-math.inf)
        check_float("rem_learning_rate", self.rem_learning_rate, strict=True, allow_none=True)
        if self.t2r_features is not None:
            check_feature_size(self.t2r_features, "t2r_features")
        super()._check_architecture()  # builds a layer: the kind checks its options (the cache's among them)
        self.rem_init_values()
        if self.rem_init == "start" and not self._start_applies():
            raise ValueError('rem_init="start" starts the REM heads from the statistical start\'s fit, and this '
                             'configuration has none: set start="ar", "ets", "arima" or "auto" (with a fixed window '
                             'and a point or quantile loss), or use rem_init="data"')

    def _group_options(self) -> dict | None:
        """The REM values and gates at ``rem_learning_rate``, without weight decay."""
        if self.rem_learning_rate is None:
            return None
        return {"recurrence": {"lr": float(self.rem_learning_rate), "weight_decay": 0.0}}

    def _allocation(self) -> dict:
        dilations = getattr(self, "_fit_dilations", None)  # chosen from the data for this fit
        if dilations is None:
            given = RSAAttention.option_defaults()["dilations"] if self.dilations is None else self.dilations
            dilations = given if isinstance(given, int) else list(given)
        return dict(n_regular=self.n_regular, n_cyclic=self.n_cyclic, n_dilated_regular=self.n_dilated_regular,
                    n_dilated_cyclic=self.n_dilated_cyclic, dilations=dilations, share_cyclic=self.share_cyclic)

    def _attention_options(self) -> dict:
        options = {name: getattr(self, name) for name in KIND_OPTIONS}
        return {**options, **self._allocation(), "gate_init": self._gate_logit()}

    def _gate_logit(self) -> float:
        """``gate_init`` resolved: the fit plan's (:mod:`tsrsa.estimator.plan`; a loaded model's as its fit
        decided), the number given, or for "auto" without a fit (the integrations build networks so) the
        layer's own start."""
        plan = vars(self).get("plan_")
        if plan is not None and plan.gate_init is not None:
            return float(plan.gate_init)
        if not _automatic(self.gate_init):
            return float(self.gate_init)
        return float(RSAAttention.option_defaults()["gate_init"])

    def rem_init_values(self) -> dict:
        """The explicit initial values of ``rem_init`` ({} for "paper")."""
        if isinstance(self.rem_init, str):
            check_choice("rem_init", self.rem_init, REM_INITS)
            return {}
        if not isinstance(self.rem_init, dict):
            raise TypeError(f"rem_init must be one of {REM_INITS} or a dict of values, got {self.rem_init!r}")
        unknown = set(self.rem_init) - set(_INIT_KEYS)
        if unknown:
            raise ValueError(f"rem_init has unknown key(s) {sorted(unknown)}; use {_INIT_KEYS}")
        plan = plan_heads(self.n_heads, **self._allocation())
        sizes = {"lambda": plan.n_eta, "gamma": plan.n_cyclic_params, "theta": plan.n_cyclic_params,
                 "gate": 1 if self.gate == "layer" else len(plan.kinds)}
        bounds = {"lambda": (-1.0, 1.0), "gamma": (0.0, 1.0)}
        values = {}
        for key, raw in self.rem_init.items():
            arr = np.broadcast_to(np.asarray(raw, dtype=np.float64), (sizes[key],)) if np.ndim(raw) == 0 \
                else np.asarray(raw, dtype=np.float64)
            if arr.shape != (sizes[key],):
                raise ValueError(f"rem_init[{key!r}] needs one value or {sizes[key]}, got {len(arr)}")
            lo, hi = bounds.get(key, (-np.inf, np.inf))
            if not np.all((arr > lo) & (arr < hi)):
                raise ValueError(f"rem_init[{key!r}] values must lie in ({lo}, {hi}), got {arr.tolist()}")
            values[key] = arr.copy()
        return values

    def _prepare_fit(self, panel, fit_lengths) -> None:
        """With rem_init="data": estimate AR roots and seasonal periods on the training parts and
        assign them to heads (dilations included, before the network is built)."""
        from tsrsa.init.heads import assign_heads, estimate_panel

        self._fit_dilations, self._head_init = None, None
        if self.rem_init not in ("data", "start"):
            return
        stride = int(self.patch_len)
        tokens = n_tokens(self.resolved_input_size, stride)
        fixed = [self.dilations] if isinstance(self.dilations, int) else list(self.dilations or [])
        reach = max([tokens - 1, *fixed]) * stride  # the longest lag a dilated head reads, in steps
        estimates = estimate_panel(panel.values, panel.offsets, fit_lengths, freq=panel.freq, max_lag=reach)
        if self.rem_init == "start":
            estimates = start_estimates(self.start_, estimates)
        allocation = self._allocation()
        self._head_init = assign_heads(
            estimates, stride=stride, n_tokens=tokens,
            n_regular=self.n_regular, n_cyclic=self.n_cyclic, n_dilated_regular=self.n_dilated_regular,
            n_dilated_cyclic=self.n_dilated_cyclic, dilations=self.dilations,
            default_dilation=RSAAttention.option_defaults()["dilations"], share_cyclic=self.share_cyclic,
        )
        if allocation["n_dilated_regular"] + allocation["n_dilated_cyclic"]:
            self._fit_dilations = self._head_init.dilations

    def _initialise_network(self, network, panel, fit_lengths) -> None:
        assigned = getattr(self, "_head_init", None) if self.rem_init in ("data", "start") else None
        if assigned is not None:
            values = {"lambda": assigned.lam, "gamma": assigned.gamma, "theta": assigned.theta}
        else:
            values = self.rem_init_values()
        for block in network.blocks:
            block.attn.set_rem_parameters(lam=values.get("lambda"), gamma=values.get("gamma"),
                                          theta=values.get("theta"), mu=values.get("gate"))
        self.init_report_ = self._report(network.blocks[0].attn, assigned)

    def _members_built(self, trained=()) -> None:
        super()._members_built(trained)
        # every member started from the same estimates and gate
        self._fit_dilations, self._head_init = None, None

    def _report(self, attention, assigned) -> pd.DataFrame:
        """Which head got what: one row per REM head of a layer (every layer starts the same);
        values per token, dilation in time steps."""
        rows = []
        source = {"paper": "paper"}.get(self.rem_init, "rem_init") if isinstance(self.rem_init, str) \
            else "rem_init"
        for rec in attention.describe_heads():
            if rec["rem_type"] == "softmax":
                continue
            row = {"head": rec["head"], "rem_type": rec["rem_type"], "source": source, "estimate": "",
                   "lambda_init": rec["lambda"], "gamma_init": rec["gamma"], "theta_init": rec["theta"],
                   "dilation": rec["dilation"] * int(self.patch_len), "note": ""}
            if assigned is not None:
                entry = assigned.report[rec["head"]]
                row.update(source=entry["source"], estimate=entry["estimate"], note=entry["note"])
            rows.append(row)
        return pd.DataFrame(rows, columns=_REPORT_COLUMNS)

    # ------------------------------------------------------------------ inspection
    def explain(self, member: int = 0) -> pd.DataFrame:
        """One row per (layer, head): what each head learned, in tokens and in time steps (of an
        ensemble, ``ensemble_size > 1``: of its ``member``-th network).

        Columns: layer, head, rem_type ("regular", "cyclic_cos", "cyclic_sin" or "softmax"),
        lambda, gamma, theta (as learned, per token), period (2 pi / theta with theta folded
        into (0, pi], times the dilation, in time steps), dilation (time steps), gate (sigmoid(mu)
        of the head's layer or head; NaN for softmax heads), lag_unit (steps per token), and the
        values each head started from: lambda_init, gamma_init, theta_init (see init_report_).
        """
        network = self._member(member)
        step = int(self.patch_len)
        rows = []
        for layer, block in enumerate(network.blocks):
            for rec in block.attn.describe_heads():
                cyclic = rec["rem_type"].startswith("cyclic")
                folded = fold_angle(rec["theta"]) if cyclic else math.nan
                period = 2 * math.pi / folded * rec["dilation"] * step if cyclic and folded > 0 else math.nan
                rows.append({"layer": layer, **rec, "period": period,
                             "dilation": rec["dilation"] * step, "lag_unit": step})
        columns = ["layer", "head", "rem_type", "lambda", "gamma", "theta", "period", "dilation", "gate", "lag_unit"]
        table = pd.DataFrame(rows, columns=columns)
        init = self.init_report_[["head", "lambda_init", "gamma_init", "theta_init"]]
        return table.merge(init, on="head", how="left")

    # ------------------------------------------------------------------ saving
    def fitted_files(self):
        state, arrays, weights = super().fitted_files()
        state["init_report"] = self.init_report_.to_dict(orient="list")
        return state, arrays, weights

    def restore_fitted(self, state, arrays, weights, device) -> None:
        super().restore_fitted(state, arrays, weights, device)
        self.init_report_ = pd.DataFrame(state["init_report"], columns=_REPORT_COLUMNS)

    def _member(self, member: int):
        """The fitted network, or an ensemble's ``member``-th network."""
        self.check_is_fitted()
        networks = members_of(self.network_)
        check_int("member", member, minimum=0)
        if member >= len(networks):
            raise ValueError(f"member={member} is not one of 0..{len(networks) - 1} (ensemble_size={len(networks)})")
        return networks[member]

    def plot_rem(self, layer: int | None = None, *, length: int | None = None, member: int = 0):
        """Heatmaps of the learned REMs (one row per layer, one column per REM head).

        Parameters
        ----------
        layer : int, optional
            Only this layer (default: all).
        length : int, optional
            Tokens to draw (default: the model's look-back in tokens).
        member : int, default 0
            Of an ensemble (``ensemble_size > 1``), the network drawn.
        """
        from tsrsa.estimator.plotting import matplotlib_classes

        network = self._member(member)
        Figure, FigureCanvasAgg = matplotlib_classes()
        blocks = list(enumerate(network.blocks))
        if layer is not None:
            if not 0 <= layer < len(blocks):
                raise ValueError(f"layer={layer} is not one of 0..{len(blocks) - 1}")
            blocks = [blocks[layer]]
        T = int(length or network.config.n_tokens)
        n_rem = blocks[0][1].attn.n_rem
        if n_rem == 0:
            raise ValueError("this model has no REM heads to draw")
        fig = Figure(figsize=(2.4 * n_rem + 0.6, 2.4 * len(blocks)), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(blocks), n_rem, squeeze=False)
        for row, (index, block) in enumerate(blocks):
            P = block.attn.rem_matrices(T).detach().cpu().numpy()  # (H_rem, T, T)
            for h in range(n_rem):
                ax = axes[row, h]
                image = ax.imshow(P[h], cmap="RdBu_r", vmin=-np.abs(P[h]).max(), vmax=np.abs(P[h]).max())
                ax.set_title(f"layer {index} head {h}\n{block.attn.plan.kinds[h]}", fontsize=8)
                ax.set_xticks([]), ax.set_yticks([])
            fig.colorbar(image, ax=axes[row, :].tolist(), shrink=0.8)
        return fig


RSAForecaster.__doc__ = RSAForecaster.__doc__.replace("{common}", COMMON_PARAMS_DOC.strip("\n").lstrip())
