"""Time-Series-Library adapter: tsrsa's networks behind that library's ``Model(configs)`` contract.

Time-Series-Library (thuml) runs each of its models as a module with a ``Model(configs)`` class
whose ``forward(x_enc, x_mark_enc, x_dec, x_mark_dec)`` returns ``[batch, pred_len, c_out]``. This
module is such a model: RSA by default (``Model``), the softmax-attention twin as
``VanillaModel``. To run them beside the library's own models, add them to the runner's table
(``Exp_Basic.model_dict`` in ``exp/exp_basic.py``)::

    from types import SimpleNamespace
    from tsrsa.integrations import tslib
    self.model_dict["RSA"] = tslib
    self.model_dict["TransformerCI"] = SimpleNamespace(Model=tslib.VanillaModel)

and run ``python run.py --task_name long_term_forecast --model RSA ...``.

What is read from ``configs``: ``seq_len`` (input steps), ``label_len`` (kept, unused: there is no
decoder), ``pred_len``, ``enc_in``, ``c_out``, ``d_model``, ``n_heads``, ``e_layers`` (encoder
blocks), ``d_ff``, ``dropout``, and where present ``use_norm`` (instance normalisation, on unless
0) and ``task_name`` (a forecasting task). Everything else is ignored; tsrsa's own architecture
arguments (``patch_len``, ``causal``, RSA's head allocation ...) are keywords of the constructor.

The network is channel-independent: every channel of ``x_enc`` is one window through the shared
backbone, normalised by its own mean and spread (RevIN) and restored on the forecast. The decoder
input is not read. With ``time_marks=True`` the time marks are read as known-future calendar
covariates of every channel (``tsrsa.nn.covariates``): ``x_mark_enc`` over the look-back and the last
``pred_len`` steps of ``x_mark_dec`` over the horizon; their number comes from ``configs.freq`` as the
library's ``timeF`` encoding makes them (``MARKS``; ``configs.embed`` must be "timeF") or from
``n_marks``. Without it (the default) the marks are not read, as in PatchTST.

Examples
--------
>>> import torch
>>> from types import SimpleNamespace
>>> from tsrsa.integrations.tslib import Model
>>> configs = SimpleNamespace(seq_len=48, label_len=24, pred_len=12, enc_in=3, c_out=3, d_model=16,
...                           n_heads=4, e_layers=1, d_ff=32, dropout=0.1)
>>> model = Model(configs)
>>> x_enc = torch.randn(2, 48, 3)
>>> model(x_enc, None, None, None).shape
torch.Size([2, 12, 3])
"""
from __future__ import annotations

import torch
from torch import nn

from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.transformer import TransformerForecaster
from tsrsa.integrations.networks import build_network
from tsrsa.nn.covariates import CovariateBatch

#: configs attributes every model of the library reads
CONFIG_FIELDS = ("seq_len", "label_len", "pred_len", "enc_in", "c_out", "d_model", "n_heads", "e_layers", "d_ff",
                 "dropout")
#: time-mark features per step of the library's ``timeF`` encoding, by ``configs.freq``
MARKS = {"h": 4, "t": 5, "s": 6, "m": 1, "a": 1, "w": 2, "d": 3, "b": 3}
#: the library's task names that this adapter serves
FORECAST_TASKS = ("long_term_forecast", "short_term_forecast", "zero_shot_forecast")


class Model(nn.Module):
    """RSA forecaster in Time-Series-Library's model contract (see the module docstring).

    Parameters
    ----------
    configs : object
        The runner's argument namespace; ``CONFIG_FIELDS`` are read, plus ``use_norm`` and
        ``task_name`` where present.
    **options
        RSAForecaster's other architecture arguments (``patch_len``, ``causal``, ``rem``: a
        ``tsrsa.REM`` or a dict of its options, ``attention_options``); the defaults are
        RSAForecaster's, with the REM's ``init="paper"`` and the gate started at 0 (its "auto" reads the
        series of a tsrsa fit). The RSA heads need ``configs.n_heads`` >= 4 with
        the default allocation (1 regular, 1 cyclic pair, 1 dilated regular).
    time_marks : bool, default False
        Read ``x_mark_enc`` / ``x_mark_dec`` as known-future covariates (see the module docstring).
    n_marks : int, optional
        Mark features per step with ``time_marks``; default from ``configs.freq`` (``MARKS``).

    Attributes
    ----------
    network : tsrsa.nn.ForecastingTransformer
        The backbone, one window ``(B * C, seq_len)`` in, ``(B * C, pred_len, 1)`` out.
    """

    _forecaster = RSAForecaster

    def __init__(self, configs, *, time_marks: bool = False, n_marks: int | None = None, **options):
        super().__init__()
        task = getattr(configs, "task_name", FORECAST_TASKS[0])
        if task not in FORECAST_TASKS:
            raise ValueError(f"task_name={task!r} is not served: {type(self).__name__} forecasts "
                             f"({', '.join(FORECAST_TASKS)})")
        missing = [name for name in CONFIG_FIELDS if not hasattr(configs, name)]
        if missing:
            raise TypeError(f"configs lacks {missing}; a Time-Series-Library model reads {list(CONFIG_FIELDS)}")
        self.seq_len, self.label_len, self.pred_len = configs.seq_len, configs.label_len, configs.pred_len
        self.enc_in, self.c_out = configs.enc_in, configs.c_out
        if not 1 <= self.c_out <= self.enc_in:
            raise ValueError(f"c_out={self.c_out} must lie in [1, enc_in={self.enc_in}]: the outputs are the last "
                             f"c_out of the enc_in input channels (features 'M': c_out = enc_in; 'MS', 'S': 1)")
        architecture = {"d_model": configs.d_model, "n_heads": configs.n_heads, "n_layers": configs.e_layers,
                        "d_ff": configs.d_ff, "dropout": float(configs.dropout),
                        "revin": bool(getattr(configs, "use_norm", True)), **options}
        self.n_marks = _mark_count(configs, n_marks) if time_marks else 0
        covariates = {"n_past": self.n_marks, "n_future": self.n_marks} if self.n_marks else None
        self.network = build_network(self._forecaster, h=self.pred_len, input_size=self.seq_len,
                                     covariates=covariates, **architecture)

    def forward(self, x_enc: torch.Tensor, x_mark_enc=None, x_dec=None, x_mark_dec=None,
                mask=None) -> torch.Tensor:
        """Forecast ``pred_len`` steps of the last ``c_out`` channels from ``x_enc`` (B, seq_len, enc_in)
        (and, with ``time_marks``, the marks ``x_mark_enc`` (B, seq_len, M) and ``x_mark_dec``
        (B, label_len + pred_len, M)); the other arguments are accepted for the contract and not read."""
        if x_enc.dim() != 3 or tuple(x_enc.shape[1:]) != (self.seq_len, self.enc_in):
            raise ValueError(f"x_enc must be (batch, seq_len={self.seq_len}, enc_in={self.enc_in}), "
                             f"got {tuple(x_enc.shape)}")
        B, L, C = x_enc.shape
        windows = x_enc.transpose(1, 2).reshape(B * C, L)  # (B * C, L): one window per channel
        inputs = windows
        if self.n_marks:
            past, future = self._marks(x_mark_enc, x_mark_dec, B)
            inputs = CovariateBatch(windows, past.repeat_interleave(C, dim=0), future.repeat_interleave(C, dim=0),
                                    None, None)  # every channel reads its window's marks
        y = self.network(inputs)[..., 0]  # (B * C, h)
        y = y.view(B, C, self.pred_len).transpose(1, 2)  # (B, h, C)
        return y[..., C - self.c_out:]  # (B, h, c_out)

    def _marks(self, x_mark_enc, x_mark_dec, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        expected = {"x_mark_enc": (batch, self.seq_len, self.n_marks),
                    "x_mark_dec": (batch, self.pred_len, self.n_marks)}
        marks = {"x_mark_enc": x_mark_enc,
                 "x_mark_dec": x_mark_dec[:, -self.pred_len:] if x_mark_dec is not None else None}
        for name, value in marks.items():
            if value is None or value.dim() != 3 or tuple(value.shape) != expected[name]:
                raise ValueError(f"time_marks=True reads {name} of shape (batch, "
                                 f"{'seq_len' if name == 'x_mark_enc' else 'at least pred_len'}, {self.n_marks}) "
                                 f"(for x_mark_dec, its last pred_len steps); got "
                                 f"{None if value is None else tuple(value.shape)}")
        return marks["x_mark_enc"].float(), marks["x_mark_dec"].float()


def _mark_count(configs, n_marks: int | None) -> int:
    if n_marks is not None:
        if isinstance(n_marks, bool) or not isinstance(n_marks, int) or n_marks < 1:
            raise ValueError(f"n_marks={n_marks!r} must be a positive int")
        return n_marks
    embed, freq = getattr(configs, "embed", "timeF"), getattr(configs, "freq", None)
    if embed != "timeF" or freq not in MARKS:
        raise ValueError(f"time_marks=True needs the library's timeF marks (configs.embed='timeF', configs.freq one "
                         f"of {list(MARKS)}; got embed={embed!r}, freq={freq!r}) or an explicit n_marks")
    return MARKS[freq]


class VanillaModel(Model):
    """The softmax-attention twin of :class:`Model`: the same backbone with TransformerForecaster's
    attention, so that the two differ in attention alone. ``**options``: ``patch_len``, ``causal``, and
    ``attention`` / ``attention_options`` for any other kind by name (``VanillaModel(configs,
    attention="rsa", attention_options={"gate_init": -2.0})``)."""

    _forecaster = TransformerForecaster
