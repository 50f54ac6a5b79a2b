"""What a fitted neural forecaster learned, as one frame per model: ``explain()``.

Each network answers in its own terms, read on the windows it forecasts from: the last ``input_size`` values
of every series the model holds (``memory_.tails``, scaled by the model's own statistics, ``memory_.loc`` and
``memory_.scale``), read without covariates (a network called without them adds nothing for them) and without
a learned cycle (``covariates={"cycle": ...}``, :mod:`tsrsa.nn.cycle`). A transformer with decoder tokens
(``known_future="tokens"``) needs the horizon's covariates in its sequence: its attention is refused, and its
start share is None.

- ``RSAForecaster``: one row per (layer, head), its REM parameters and gate (rsa.py);
- ``TransformerForecaster`` (:func:`attention_by_lag`): one row per (layer, head, lag): the share of
  each token's softmax attention that falls on the token ``lag`` tokens earlier (negative: later, in
  a bidirectional encoder), averaged over every query token of every window; over the lags of one
  (layer, head) the shares sum to 1;
- ``LSTMForecaster`` (:func:`input_sensitivity`): one row per input step ``lag`` (1: the window's last
  value): the absolute gradient of the mean forecast (over every horizon step and output) with respect
  to that value, averaged over the windows, and its share of the sum over the window;
- ``DLinearForecaster`` (:func:`linear_weights`): one row per (component, lag), the trend and the
  remainder maps' weights on each input step, averaged over the horizon's steps and outputs (signed
  and absolute), and each row's share of the absolute weights.

Every frame also says how much of the forecast the statistical start gives (:func:`start_share`), in
``frame.attrs``: ``start_share``, the mean absolute start forecast |S| over |S| + the mean absolute
correction of the network |C| (the forecast is S + C, in the scaled units the network reads, over
every horizon step and output of those windows; S is the statistical model's forecast, the map
``network.start`` of :mod:`tsrsa.nn.start` with the window's mean a RevIN network restores): 1 when the
network adds nothing, 0 when the start gives nothing; ``start_forecast`` and ``network_correction``,
those two means. Without a fitted start the three are None. The columns stay those above (RSA's, its
REM table's): the start's part never shifts them.

An ensemble (``ensemble_size > 1``) is explained one network at a time: ``member``.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import torch

from tsrsa.estimator.params import check_int
from tsrsa.nn.ensemble import members_of

#: the keys of ``explain()``'s ``frame.attrs`` that report the statistical start's part of the forecast
START_ATTRS = ("start_share", "start_forecast", "network_correction")
#: windows per forward pass: bounded memory, whatever the number of series
BATCH = 256
#: columns of each frame
ATTENTION_COLUMNS = ["layer", "head", "lag", "lag_steps", "weight"]
SENSITIVITY_COLUMNS = ["lag", "sensitivity", "share"]
LINEAR_COLUMNS = ["component", "lag", "weight", "abs_weight", "share"]


def member_network(model, member: int = 0) -> torch.nn.Module:
    """The fitted network of ``model``, or its ensemble's ``member``-th one (a ValueError naming the members
    there are)."""
    model.check_is_fitted()
    networks = members_of(model.network_)
    check_int("member", member, minimum=0)
    if member >= len(networks):
        raise ValueError(f"member={member} is not one of 0..{len(networks) - 1} (ensemble_size={len(networks)})")
    return networks[member]


def reads_bare_windows(network: torch.nn.Module) -> bool:
    """Whether ``network`` forecasts from windows alone: not one with decoder tokens of the horizon's
    covariates (``known_future="tokens"``), whose sequence needs them."""
    covariates = getattr(network, "covariates", None)
    return covariates is None or getattr(covariates, "future_embed", None) is None


def last_windows(model, network: torch.nn.Module) -> torch.Tensor:
    """(S, L) float32 on the network's device: the last ``input_size`` values of every series the model holds,
    scaled as the network reads them. A network whose sequence holds tokens of the horizon's covariates
    (``known_future="tokens"``) cannot read bare windows and is refused."""
    if not reads_bare_windows(network):
        raise ValueError("explain() reads the windows alone, and known_future='tokens' puts the horizon's covariates "
                         "in the sequence as tokens: explain a model fitted with known_future='readout'")
    memory, L = model.memory_, int(model.resolved_input_size)
    x = (memory.tails[:, -L:] - memory.loc[:, None]) / memory.scale[:, None]  # (S, L)
    device = next(network.parameters()).device
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device)


@contextlib.contextmanager
def evaluating(network: torch.nn.Module):
    """``network`` in evaluation mode (no dropout) for the block, then back to the mode it was in."""
    was = network.training
    network.eval()
    try:
        yield network
    finally:
        network.train(was)


def start_share(model, network: torch.nn.Module) -> dict:
    """``{start_share, start_forecast, network_correction}`` of ``network`` on the model's last windows
    (module docstring); all None when no start was fitted, or when the network cannot read bare windows
    (:func:`reads_bare_windows`)."""
    start = getattr(network, "start", None)
    if start is None or not reads_bare_windows(network):
        return dict.fromkeys(START_ATTRS)
    x = last_windows(model, network)
    base = correction = 0.0
    with evaluating(network), torch.no_grad():
        for chunk in x.split(BATCH):
            total = network(chunk).double()  # (B, H, Q)
            own = start(chunk).double()  # (B, H, 1)
            if start.minus_mean:  # a RevIN network restores the window's mean: the start's forecast holds it
                own = own + chunk.double().mean(dim=1)[:, None, None]
            base += float(own.abs().mean()) * len(chunk) / len(x)
            correction += float((total - own).abs().mean()) * len(chunk) / len(x)
    share = base / (base + correction) if base + correction > 0 else 1.0
    return {"start_share": share, "start_forecast": base, "network_correction": correction}


def with_start_share(frame: pd.DataFrame, model, network: torch.nn.Module) -> pd.DataFrame:
    """``frame`` with the start's part of the forecast in its ``attrs`` (:func:`start_share`)."""
    frame.attrs.update(start_share(model, network))
    return frame


def attention_by_lag(model, member: int = 0) -> pd.DataFrame:
    """The softmax attention of every (layer, head) by lag, on the model's last windows (module docstring)."""
    from tsrsa.nn.softmax import SoftmaxAttention, softmax_weights

    network = member_network(model, member)
    if model.stream:
        raise ValueError("explain() reads the attention of fixed windows, and a model fitted with stream=True keeps "
                         "a recurrent state instead: explain a model fitted with stream=False")
    blocks = list(network.blocks)
    if not all(isinstance(block.attn, SoftmaxAttention) for block in blocks):
        raise ValueError(f"explain() reads softmax attention weights, and attention={model.attention!r} has none: "
                         f"RSAForecaster explains its REM heads; other kinds mix tokens without weights to read")
    mean: dict[int, torch.Tensor] = {}  # layer -> (H, N, N) the weights summed over windows

    def weights(attn, args, layer):
        """The attention weights of the block input ``args[0]`` (B, N, D), added up over the windows."""
        q, k, _ = attn.project(args[0])  # (B, H, N, hs)
        w = softmax_weights(q, k, causal=attn.causal, slopes=attn.slopes, training=False).double()  # (B, H, N, N)
        mean[layer] = mean.get(layer, 0) + w.sum(dim=0)

    hooks = [block.attn.register_forward_pre_hook(lambda attn, args, i=i: weights(attn, args, i))
             for i, block in enumerate(blocks)]
    x = last_windows(model, network)
    try:
        with evaluating(network), torch.no_grad():
            for chunk in x.split(BATCH):
                network(chunk)
    finally:
        for hook in hooks:
            hook.remove()
    step, rows = int(model.patch_len), []
    for layer in range(len(blocks)):
        w = mean[layer].cpu() / len(x)  # (H, N, N) the mean weights of each query over the keys
        N = w.size(-1)
        for lag in range(-(N - 1), N):  # query - key, in tokens: the diagonal at offset -lag
            share = torch.diagonal(w, offset=-lag, dim1=-2, dim2=-1).sum(dim=-1) / N  # (H,)
            rows += [{"layer": layer, "head": head, "lag": lag, "lag_steps": lag * step, "weight": float(share[head])}
                     for head in range(w.size(0))]
    table = pd.DataFrame(rows, columns=ATTENTION_COLUMNS).sort_values(["layer", "head", "lag"], ignore_index=True)
    return with_start_share(table, model, network)


def input_sensitivity(model, member: int = 0) -> pd.DataFrame:
    """The absolute gradient of the mean forecast with respect to each input step (module docstring)."""
    network = member_network(model, member)
    x = last_windows(model, network)
    summed, per_output = 0.0, 1
    with evaluating(network), torch.enable_grad(), torch.backends.cudnn.flags(enabled=False):
        for chunk in x.split(BATCH):
            chunk = chunk.clone().requires_grad_(True)
            out = network(chunk)  # (B, H, Q)
            (gradient,) = torch.autograd.grad(out.float().sum(), chunk)  # (B, L): of the sum over steps and outputs
            summed = summed + gradient.abs().double().sum(dim=0).cpu().numpy()
            per_output = out.shape[1] * out.shape[2]
    sensitivity = summed[::-1] / (len(x) * per_output)  # (L,) latest step first
    total = sensitivity.sum()
    table = pd.DataFrame({"lag": np.arange(1, len(sensitivity) + 1), "sensitivity": sensitivity,
                          "share": sensitivity / total if total > 0 else np.full(len(sensitivity), np.nan)},
                         columns=SENSITIVITY_COLUMNS)
    return with_start_share(table, model, network)


def linear_weights(model, member: int = 0) -> pd.DataFrame:
    """The weights of DLinear's trend and remainder maps on each input step (module docstring)."""
    network = member_network(model, member)
    rows = []
    with torch.no_grad():
        for component, linear in (("trend", network.trend_map), ("remainder", network.remainder_map)):
            w = linear.weight.double().cpu().numpy()[:, ::-1]  # (H * Q, L), latest step first
            rows.append(pd.DataFrame({"component": component, "lag": np.arange(1, w.shape[1] + 1),
                                      "weight": w.mean(axis=0), "abs_weight": np.abs(w).mean(axis=0)}))
    table = pd.concat(rows, ignore_index=True)
    total = table["abs_weight"].sum()
    table["share"] = table["abs_weight"] / total if total > 0 else np.nan
    return with_start_share(table[LINEAR_COLUMNS], model, network)
