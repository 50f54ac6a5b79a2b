"""The notebooks: stored without outputs, and each runs top to bottom on the small budget.

Each notebook is executed by nbclient in a fresh kernel of this environment (the ``python3``
kernel of ipykernel, which runs ``sys.executable``), from the ``notebooks/`` folder, with
``TSRSA_NOTEBOOK_BUDGET=small``. The benchmark data folder is passed on only when it holds
ETTh1.csv, so no notebook reaches for the network; IPython's own files go to tmp_path, and the
test checks that the notebooks wrote nothing into the checkout.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "notebooks"
NAMES = ["01_quickstart.ipynb", "02_inside_rsa.ipynb", "03_benchmarks.ipynb", "04_tuning.ipynb"]
CELL_TIMEOUT = 240  # seconds; each notebook takes seconds on the small budget


def test_the_notebooks_are_there():
    assert sorted(p.name for p in FOLDER.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stored_without_outputs(name):
    nb = nbformat.read(FOLDER / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, "strip outputs before committing"
    assert "TSRSA_NOTEBOOK_BUDGET" in code[0].source  # the budget is read in the first code cell
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


def _checkout_files() -> set[str]:
    """Files in notebooks/ (the notebooks' working folder) and the repository root."""
    return {p.name for p in ROOT.iterdir()} | {f"notebooks/{p.name}" for p in FOLDER.iterdir()}


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_on_the_small_budget(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TSRSA_NOTEBOOK_BUDGET", "small")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # tiny networks; no oversubscribed cores
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # the kernel's history and profile
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # its connection file
    monkeypatch.setenv("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))  # this environment's kernel first
    data = os.environ.get("TSRSA_DATA_DIR")
    if not data or not (Path(data) / "ETTh1.csv").is_file():
        monkeypatch.delenv("TSRSA_DATA_DIR", raising=False)
    before = _checkout_files()

    nb = nbformat.read(FOLDER / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(FOLDER)}})
    began = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell's traceback, if any cell fails
    print(f"{name}: {time.perf_counter() - began:.1f} s")

    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    warnings_seen = [out.text for out in outputs if out.output_type == "stream" and out.name == "stderr"]
    assert not warnings_seen, warnings_seen  # the notebooks run clean
    assert any("image/png" in out.get("data", {}) for out in outputs)  # each draws something
    assert _checkout_files() == before
