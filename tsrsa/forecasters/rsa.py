"""RSAForecaster: the shared transformer backbone with Self-Attention with Recurrence."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tsrsa.estimator.common_params import COMMON_PARAMS_DOC, neural_init
from tsrsa.estimator.explain import member_network
from tsrsa.estimator.option_groups import DictGroup
from tsrsa.estimator.plan import SINGLE_SERIES_GATE  # noqa: F401 (its old home)
from tsrsa.forecasters.rem_options import LAYER_NAMES, REM, REM_INITS  # noqa: F401 (REM_INITS: its old home)
from tsrsa.forecasters.transformer import TRANSFORMER_PARAMS, TransformerForecaster
from tsrsa.nn.patches import n_tokens
from tsrsa.nn.rem import fold_angle
from tsrsa.nn.rsa import RSAAttention
from tsrsa.nn.rsa_heads import plan_heads
from tsrsa.nn.t2r import check_feature_size
from tsrsa.start.fit import start_estimates
from tsrsa.training.budget import AUTO

_REPORT_COLUMNS = ["head", "rem_type", "source", "estimate", "lambda_init", "gamma_init", "theta_init",
                   "dilation", "note"]
#: the layer's options the estimator does not offer: the REM product's algorithm is chosen by length,
#: ALiBi by the configuration (``stream=True``)
_LAYER_ONLY = ("method", "alibi")
#: the options of the "rsa" kind that RSAForecaster takes: the REM's in ``rem`` (a :class:`REM`), the others
#: (the softmax branch's cache and T2R features) in ``attention_options``
KIND_OPTIONS = tuple(name for name in RSAAttention.option_defaults() if name not in _LAYER_ONLY)
_REM_LAYER_OPTIONS = tuple(REM().layer_options())
#: RSAForecaster's ``attention_options``: the kind's options beside the REM's, with the layer's defaults
ATTENTION_OPTIONS = {name: RSAAttention.option_defaults()[name] for name in KIND_OPTIONS
                     if name not in _REM_LAYER_OPTIONS}
#: where the estimator's defaults differ from the layer's, and why: one dilated regular head fills the
#: four default heads (1 regular, 1 cyclic pair, 1 dilated: a seasonal memory); the dilation comes from
#: the data's seasonal periods at fit (a layer built without data takes its own default, 2); the gate's
#: start follows the data (the fit plan's rule, :mod:`tsrsa.estimator.plan`): :class:`REM`'s defaults
ESTIMATOR_DEFAULTS = {"n_dilated_regular": 1, "dilations": None, "gate_init": AUTO}
#: RSAForecaster's own arguments, between ``input_size`` and the shared ones: the transformer's, without the
#: kind's name (the kind is "rsa"), and the REM heads' group after ``readout_tokens``
_READOUT = [name for name, _ in TRANSFORMER_PARAMS].index("readout_tokens") + 1
RSA_OWN_PARAMS = (*[(n, d) for n, d in TRANSFORMER_PARAMS[:_READOUT] if n not in ("attention", "attention_options")],
                  ("rem", None), ("attention_options", None), *TRANSFORMER_PARAMS[_READOUT:])
#: the REM's options whose names as arguments of their own (before 0.16) differ: field -> old name
_OLD_NAMES = {"mask": "rem_mask", "init": "rem_init", "learning_rate": "rem_learning_rate"}


#: a layer option of the REM's -> its nested parameter name (``rem_mask`` -> ``rem__mask``)
_NESTED = {layer: f"rem__{field}" for field, layer in {**{n: n for n in REM.field_names()}, **LAYER_NAMES}.items()}


class _NestedTrial:
    """An Optuna trial whose suggestions are named by ``names`` (a layer's option -> its nested parameter name),
    so that a study's ``best_params`` are parameters ``set_params`` takes."""

    def __init__(self, trial, names: dict):
        self.trial, self.names = trial, names

    def suggest_float(self, name, *args, **kwargs):
        return self.trial.suggest_float(self.names.get(name, name), *args, **kwargs)

    def suggest_int(self, name, *args, **kwargs):
        return self.trial.suggest_int(self.names.get(name, name), *args, **kwargs)

    def suggest_categorical(self, name, *args, **kwargs):
        return self.trial.suggest_categorical(self.names.get(name, name), *args, **kwargs)


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
        Look-back window in steps. None: two horizons, at least one season (the frequency's natural
        period: 52 weekly, 12 monthly; the week of hourly data) and one patch, shortened on short series
        (docs/fit_plan.md);
        "auto": chosen among 96-720 steps on the validation windows (``tsrsa.estimator.lookback``).
    d_model, n_heads, n_layers, d_ff, dropout, causal, revin, stream, readout_tokens, known_future
        As in TransformerForecaster. With ``causal=True`` (and so with ``stream=True``) both branches
        are causal: the softmax mask, and the REM's ``mask`` must be "causal". In the streaming
        configuration each REM head advances by its recurrence, O(1) per token, the REM's ``max_lag``
        must be None, and the softmax branch carries ALiBi relative positions (the kind's ``alibi``
        option).
    rem : REM or dict, optional
        The REM heads and their start: ``tsrsa.REM(n_regular=..., n_cyclic=..., n_dilated_regular=...,
        n_dilated_cyclic=..., dilations=..., gate=..., share_cyclic=..., mask=..., max_lag=...,
        gate_init=..., init=..., learning_rate=...)`` or a dict of those options (``{"n_cyclic": 2}``);
        None: ``REM()``, one regular head, one cyclic pair and one dilated regular head per layer,
        started from the training data (:class:`tsrsa.REM` documents each option). Until tsrsa 0.19
        the options are also taken as arguments of their own (``n_cyclic=2``, ``rem_init="paper"``,
        ``rem_mask``, ``rem_learning_rate``), with a DeprecationWarning, and folded in here.
    attention_options : dict, optional
        The softmax branch's options (those of the "rsa" kind beside the REM's), checked by the kind
        at ``fit``: ``cache_size``, ``cache_policy``, ``cache_sinks`` (int or None, str, int; default
        None, "window", 4): streaming only, bound the softmax branch's key/value cache (each query
        attends to at most ``cache_size`` tokens; "window", "sinks", "h2o" or "tova" picks the token to
        drop; None keeps every token; docs/streaming.md, "Bounded caches"); ``t2r_features`` (int,
        optional): replace the softmax branch's exp(q·k / √d) by T2R's learned relu features of this
        size per head (Kasai et al. 2021), so that with ``stream=True`` both branches are recurrences
        of fixed size; usually set by ``tsrsa.convert.to_recurrent``, which finetunes a fitted softmax
        model into this form; None keeps softmax. Until tsrsa 0.19 they are also taken as arguments of
        their own (``cache_size=8``), with a DeprecationWarning, and folded in here.
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
    option_groups = {**TransformerForecaster.option_groups, "rem": REM,
                     "attention_options": DictGroup("attention_options", ATTENTION_OPTIONS)}
    #: the REM's options and the softmax branch's, arguments of their own before 0.16
    moved_params = {**TransformerForecaster.moved_params,
                    **{_OLD_NAMES.get(name, name): ("rem", name) for name in REM.field_names()},
                    **{name: ("attention_options", name) for name in ATTENTION_OPTIONS}}

    @property
    def resolved_rem(self) -> REM:
        """``rem`` as a checked :class:`~tsrsa.forecasters.rem_options.REM` (None: the defaults)."""
        return REM.coerce(self.rem, "rem")

    def resolved_attention_options(self) -> dict:
        """``attention_options`` with the defaults filled (an unknown key refused, the REM's with its place)."""
        given = self.attention_options
        if isinstance(given, dict):
            misplaced = [k for k in given if k in _REM_LAYER_OPTIONS or k in REM.field_names()]
            if misplaced:
                raise ValueError(f"attention_options={given!r} names the REM's option {misplaced[0]!r}; RSAForecaster "
                                 f"takes it in rem (rem={{{misplaced[0]!r}: ...}}, tsrsa.REM)")
        return self.option_groups["attention_options"].coerce(given, "attention_options")

    # ------------------------------------------------------------------ checks and network
    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: the transformer's, the gate's start, the REM mask (unless the
        model is causal) and the REM values' own learning rate, each by its nested name (``rem__gate_init``)."""
        space = super().search_space(trial, estimator)
        if estimator is None:
            space.update(cls._searched_options(estimator, RSAAttention.search_space(cls._kind_trial(trial))))
        return {**space, "rem__learning_rate": trial.suggest_float("rem__learning_rate", 1e-4, 3e-2, log=True)}

    @staticmethod
    def _kind_trial(trial):
        """The trial the kind's space draws from: its options are the REM's, named ``rem__<field>``."""
        return _NestedTrial(trial, _NESTED)

    @staticmethod
    def _searched_options(estimator, options: dict) -> dict:
        """The kind's sampled options (the layer's names) as the REM's, by their nested names (``rem__mask``)."""
        return {_NESTED.get(name, name): value for name, value in options.items()}

    def attention_kind(self) -> type:
        return RSAAttention

    def _check_architecture(self) -> None:
        rem = self.resolved_rem  # each option checked (tsrsa.REM)
        plan_heads(self.n_heads, **self._allocation())  # raises for impossible allocations
        features = self.resolved_attention_options()["t2r_features"]
        if features is not None:
            check_feature_size(features, "t2r_features")
        super()._check_architecture()  # builds a layer: the kind checks its options (the cache's among them)
        self.rem_init_values()
        if rem.init == "start" and not self.statistical_start.applies():
            raise ValueError('rem=REM(init="start") starts the REM heads from the statistical start\'s fit, and '
                             'this configuration has none: set start="ar", "ets", "arima" or "auto" (with a fixed '
                             'window and a point or quantile loss), or use rem=REM(init="data")')

    def _group_options(self) -> dict | None:
        """The REM values and gates at the REM's ``learning_rate``, without weight decay."""
        rate = self.resolved_rem.learning_rate
        if rate is None:
            return None
        return {"recurrence": {"lr": float(rate), "weight_decay": 0.0}}

    def _allocation(self, data_init=None) -> dict:
        """The REM heads by kind and their dilations: those ``data_init`` (the heads ``_prepare_fit`` assigned
        for this fit) chose from the data where dilated heads read them, else those given."""
        rem = self.resolved_rem
        dilations = None
        if data_init is not None and rem.n_dilated_regular + rem.n_dilated_cyclic:
            dilations = data_init.dilations
        if dilations is None:
            given = RSAAttention.option_defaults()["dilations"] if rem.dilations is None else rem.dilations
            dilations = given if isinstance(given, int) else list(given)
        return dict(n_regular=rem.n_regular, n_cyclic=rem.n_cyclic, n_dilated_regular=rem.n_dilated_regular,
                    n_dilated_cyclic=rem.n_dilated_cyclic, dilations=dilations, share_cyclic=rem.share_cyclic)

    def _attention_options(self, data_init=None) -> dict:
        options = {**self.resolved_rem.layer_options(), **self.resolved_attention_options()}
        options = {name: options[name] for name in KIND_OPTIONS}  # the layer's order
        return {**options, **self._allocation(data_init), "gate_init": self._gate_logit()}

    def _gate_logit(self) -> float:
        """The REM's ``gate_init`` resolved: the fit plan's (:mod:`tsrsa.estimator.plan`; a loaded model's as its
        fit decided), the number given, or for "auto" without a fit (the integrations build networks so) the
        layer's own start."""
        plan = vars(self).get("plan_")
        if plan is not None and plan.gate_init is not None:
            return float(plan.gate_init)
        given = self.resolved_rem.gate_init
        if not _automatic(given):
            return float(given)
        return float(RSAAttention.option_defaults()["gate_init"])

    def rem_init_values(self) -> dict:
        """The explicit initial values of the REM's ``init`` ({} for "data", "start" and "paper")."""
        rem = self.resolved_rem
        if isinstance(rem.init, str):
            return {}
        plan = plan_heads(self.n_heads, **self._allocation())
        sizes = {"lambda": plan.n_eta, "gamma": plan.n_cyclic_params, "theta": plan.n_cyclic_params,
                 "gate": 1 if rem.gate == "layer" else len(plan.kinds)}
        bounds = {"lambda": (-1.0, 1.0), "gamma": (0.0, 1.0)}
        values = {}
        for key, raw in rem.init.items():
            arr = np.broadcast_to(np.asarray(raw, dtype=np.float64), (sizes[key],)) if np.ndim(raw) == 0 \
                else np.asarray(raw, dtype=np.float64)
            if arr.shape != (sizes[key],):
                raise ValueError(f"rem's init[{key!r}] needs one value or {sizes[key]}, got {len(arr)}")
            lo, hi = bounds.get(key, (-np.inf, np.inf))
            if not np.all((arr > lo) & (arr < hi)):
                raise ValueError(f"rem's init[{key!r}] values must lie in ({lo}, {hi}), got {arr.tolist()}")
            values[key] = arr.copy()
        return values

    def _prepare_fit(self, panel, fit_lengths):
        """With the REM's init="data" (or "start"): estimate AR roots and seasonal periods on the training parts
        (or read the statistical start's) and assign them to heads, dilations included, before the network is
        built; returns the assignment (:func:`tsrsa.init.heads.assign_heads`), None for another init."""
        from tsrsa.init.heads import assign_heads, estimate_panel

        rem = self.resolved_rem
        if rem.init not in ("data", "start"):
            return None
        stride = int(self.patch_len)
        tokens = n_tokens(self.resolved_input_size, stride)
        fixed = [rem.dilations] if isinstance(rem.dilations, int) else list(rem.dilations or [])
        reach = max([tokens - 1, *fixed]) * stride  # the longest lag a dilated head reads, in steps
        estimates = estimate_panel(panel.values, panel.offsets, fit_lengths, freq=panel.freq, max_lag=reach)
        if rem.init == "start":
            estimates = start_estimates(self.start_, estimates)
        return assign_heads(
            estimates, stride=stride, n_tokens=tokens,
            n_regular=rem.n_regular, n_cyclic=rem.n_cyclic, n_dilated_regular=rem.n_dilated_regular,
            n_dilated_cyclic=rem.n_dilated_cyclic, dilations=rem.dilations,
            default_dilation=RSAAttention.option_defaults()["dilations"], share_cyclic=rem.share_cyclic,
        )

    def _initialise_network(self, network, panel, fit_lengths, data_init=None) -> None:
        """Every layer's REM values from ``data_init`` (the heads ``_prepare_fit`` assigned) or the REM's
        explicit ``init``; ``init_report_`` says which head got what."""
        init = self.resolved_rem.init
        assigned = data_init if isinstance(init, str) and init in ("data", "start") else None
        if assigned is not None:
            values = {"lambda": assigned.lam, "gamma": assigned.gamma, "theta": assigned.theta}
        else:
            values = self.rem_init_values()
        for block in network.blocks:
            block.attn.set_rem_parameters(lam=values.get("lambda"), gamma=values.get("gamma"),
                                          theta=values.get("theta"), mu=values.get("gate"))
        self.init_report_ = self._report(network.blocks[0].attn, assigned)

    def _report(self, attention, assigned) -> pd.DataFrame:
        """Which head got what: one row per REM head of a layer (every layer starts the same);
        values per token, dilation in time steps."""
        rows = []
        init = self.resolved_rem.init
        source = "paper" if isinstance(init, str) and init == "paper" else "rem_init"  # saved: the old label kept
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
        ``frame.attrs["start_share"]``: the statistical start's part of the forecast on the last window
        of every fitted series (None without a start; :mod:`tsrsa.estimator.explain`).
        """
        network = member_network(self, member)
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
        from tsrsa.estimator.explain import with_start_share

        return with_start_share(table.merge(init, on="head", how="left"), self, network)

    # ------------------------------------------------------------------ saving
    def fitted_files(self):
        state, arrays, weights = super().fitted_files()
        state["init_report"] = self.init_report_.to_dict(orient="list")
        return state, arrays, weights

    def restore_fitted(self, state, arrays, weights, device) -> None:
        super().restore_fitted(state, arrays, weights, device)
        self.init_report_ = pd.DataFrame(state["init_report"], columns=_REPORT_COLUMNS)

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

        network = member_network(self, member)
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
