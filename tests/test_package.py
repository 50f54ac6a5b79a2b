"""Package-level promises: a light import, the public names, the demo, the README commands."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import tsrsa

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "optuna", "statsmodels", "matplotlib", "pytorch_forecasting", "lightning", "sklearn", "sktime")


def _modules_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.processes
def test_import_tsrsa_leaves_heavy_modules_out():
    assert _modules_after("import tsrsa") == []


@pytest.mark.processes
def test_importing_a_forecaster_needs_only_torch():
    assert _modules_after("from tsrsa import TransformerForecaster, SeasonalNaiveForecaster") == ["torch"]


def test_public_names():
    for name in ("SeasonalNaiveForecaster", "LSTMForecaster", "TransformerForecaster", "load", "evaluate",
                 "datasets", "metrics", "nn"):
        assert name in dir(tsrsa) and getattr(tsrsa, name) is not None
    assert tsrsa.__version__


def test_readme_gives_the_two_commands_and_ci_runs_make_test():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_demo_runs_end_to_end(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import co2_demo
    finally:
        sys.path.pop(0)
    table = co2_demo.main(["--output-dir", str(tmp_path), "--max-epochs", "1"])
    out = capsys.readouterr().out
    assert list(table.index) == ["SeasonalNaive", "LSTM", "Transformer", "RSA"]
    assert list(table.columns) == ["MAE", "MSE", "fit seconds"]
    assert (table["MAE"] > 0).all() and "MAE" in out
    png = tmp_path / "co2_forecast.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert isinstance(table, pd.DataFrame)


def test_a_renamed_public_name_warns_and_names_its_new_spelling():
    from tsrsa.estimator import stream_state
    from tsrsa.forecasters import streaming

    with pytest.warns(DeprecationWarning, match="use tsrsa.forecasters.stream_state.StreamState"):
        assert streaming.StreamMemory is stream_state.StreamState
    with pytest.raises(AttributeError, match="StreamState.advance"):
        streaming.continued_streams  # noqa: B018


def test_the_ops_old_names_name_their_new_spelling():
    import torch

    from tsrsa.nn import kv_cache, softmax, t2r

    q = k = v = torch.randn(1, 2, 5, 4)
    with pytest.warns(DeprecationWarning, match="use tsrsa.nn.softmax.softmax_parallel"):
        branch = softmax.softmax_branch
    torch.testing.assert_close(branch(q, k, v, None, causal=True, dropout=0.0),
                               softmax.softmax_parallel(q, k, v, causal=True)[0])
    with pytest.warns(DeprecationWarning, match="t2r_chunked"):
        t2r.t2r_parallel  # noqa: B018
    for module, name, new in ((softmax, "KeyValueCache", "KeyValueState"), (t2r, "t2r_empty_state", "LinearState"),
                              (kv_cache, "empty_bounded_cache", "BoundedCacheState.empty")):
        with pytest.raises(AttributeError, match=new):
            getattr(module, name)
