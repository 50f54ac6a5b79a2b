"""Published long-horizon figures at input 96 (multivariate, scaled MSE / MAE), as anchors.

Source: the full long-term forecasting results of iTransformer (Liu et al., ICLR 2024, appendix
table of all horizons, look-back 96), which reprints DLinear and FEDformer from TimesNet (Wu et
al., ICLR 2023, same protocol) and adds PatchTST and RLinear re-run at input 96. The DLinear and
FEDformer cells were checked against a second reprint of the TimesNet table; the iTransformer
and PatchTST cells against a second reprint of the iTransformer table, and every average
against its four horizons. Cells we are not sure of are left out (None), never guessed:
PatchTST's ETTh2 H96/H192 (the two reprints disagree) and RLinear's per-horizon cells (only its
averages are kept).

``ANCHORS[model][dataset][horizon]`` is ``(mse, mae)``; the key ``"avg"`` is the published
average over the four horizons. A value of None means unknown.
"""
from __future__ import annotations

SOURCE = ("iTransformer (Liu et al., ICLR 2024), full long-term forecasting results at input 96; "
          "DLinear and FEDformer as reprinted there from TimesNet (Wu et al., ICLR 2023)")

_H = (96, 192, 336, 720)


def _rows(*cells, avg=(None, None)) -> dict:
    out = dict(zip(_H, cells))
    out["avg"] = avg
    return out


ANCHORS: dict[str, dict[str, dict]] = {
    "DLinear": {
        "ETTh1": _rows((0.386, 0.400), (0.437, 0.432), (0.481, 0.459), (0.519, 0.516), avg=(0.456, 0.452)),
        "ETTh2": _rows((0.333, 0.387), (0.477, 0.476), (0.594, 0.541), (0.831, 0.657), avg=(0.559, 0.515)),
        "ETTm1": _rows((0.345, 0.372), (0.380, 0.389), (0.413, 0.413), (0.474, 0.453), avg=(0.403, 0.407)),
        "ETTm2": _rows((0.193, 0.292), (0.284, 0.362), (0.369, 0.427), (0.554, 0.522), avg=(0.350, 0.401)),
        "weather": _rows((0.196, 0.255), (0.237, 0.296), (0.283, 0.335), (0.345, 0.381), avg=(0.265, 0.317)),
    },
    "FEDformer": {
        "ETTh1": _rows((0.376, 0.419), (0.420, 0.448), (0.459, 0.465), (0.506, 0.507), avg=(0.440, 0.460)),
        "ETTh2": _rows((0.358, 0.397), (0.429, 0.439), (0.496, 0.487), (0.463, 0.474), avg=(0.437, 0.449)),
        "ETTm1": _rows((0.379, 0.419), (0.426, 0.441), (0.445, 0.459), (0.543, 0.490), avg=(0.448, 0.452)),
        "ETTm2": _rows((0.203, 0.287), (0.269, 0.328), (0.325, 0.366), (0.421, 0.415), avg=(0.305, 0.349)),
        "weather": _rows((0.217, 0.296), (0.276, 0.336), (0.339, 0.380), (0.403, 0.428), avg=(0.309, 0.360)),
    },
    "iTransformer": {
        "ETTh1": _rows((0.386, 0.405), (0.441, 0.436), (0.487, 0.458), (0.503, 0.491), avg=(0.454, 0.447)),
        "ETTh2": _rows((0.297, 0.349), (0.380, 0.400), (0.428, 0.432), (0.427, 0.445), avg=(0.383, 0.407)),
        "ETTm1": _rows((0.334, 0.368), (0.377, 0.391), (0.426, 0.420), (0.491, 0.459), avg=(0.407, 0.410)),
        "ETTm2": _rows((0.180, 0.264), (0.250, 0.309), (0.311, 0.348), (0.412, 0.407), avg=(0.288, 0.332)),
        "weather": _rows((0.174, 0.214), (0.221, 0.254), (0.278, 0.296), (0.358, 0.349), avg=(0.258, 0.279)),
    },
    "PatchTST": {
        "ETTh1": _rows((0.414, 0.419), (0.460, 0.445), (0.501, 0.466), (0.500, 0.488), avg=(0.469, 0.454)),
        "ETTh2": _rows((None, None), (None, None), (0.426, 0.433), (0.431, 0.446), avg=(0.387, None)),
        "ETTm1": _rows((0.329, 0.367), (0.367, 0.385), (0.399, 0.410), (0.454, 0.439), avg=(0.387, 0.400)),
        "ETTm2": _rows((0.175, 0.259), (0.241, 0.302), (0.305, 0.343), (0.402, 0.400), avg=(0.281, 0.326)),
        "weather": _rows((0.177, 0.218), (0.225, 0.259), (0.278, 0.297), (0.354, 0.348), avg=(0.259, 0.281)),
    },
    "RLinear": {
        "ETTh1": _rows(*[(None, None)] * 4, avg=(0.446, None)),
        "ETTh2": _rows(*[(None, None)] * 4, avg=(0.374, None)),
        "ETTm1": _rows(*[(None, None)] * 4, avg=(0.414, None)),
        "ETTm2": _rows(*[(None, None)] * 4, avg=(0.286, None)),
    },
}

#: BENCHMARKS.md's protocol check: closed-form channel-independent ridge (penalty 10) on
#: mean-centred windows, input 96 (ETTm fitted on every second training window)
RIDGE_CHECK: dict[str, dict] = {
    "ETTh1": _rows((0.383, 0.392), (0.434, 0.421), (0.476, 0.443), (0.470, 0.462), avg=(0.440, 0.430)),
    "ETTh2": _rows((0.289, 0.338), (0.374, 0.390), (0.413, 0.425), (0.419, 0.442), avg=(0.374, 0.399)),
    "ETTm1": _rows((0.353, 0.373), (0.390, 0.391), (0.423, 0.413), (0.484, 0.447), avg=(0.413, 0.406)),
    "ETTm2": _rows((0.183, 0.266), (0.247, 0.305), (0.308, 0.344), (0.410, 0.401), avg=(0.287, 0.329)),
}


def anchor(model: str, dataset: str, horizon) -> tuple[float | None, float | None]:
    """Published (mse, mae) of ``model`` on ``dataset`` at ``horizon`` (or "avg"); None where unknown."""
    return ANCHORS.get(model, {}).get(dataset, {}).get(horizon, (None, None))
