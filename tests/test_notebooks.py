"""The notebooks: stored without outputs, and each runs top to bottom on the small budget.

Each notebook is executed by nbclient in a fresh kernel of this environment (the ``python3``
kernel of ipykernel, which runs ``sys.executable``), from the ``notebooks/`` folder, with
``TSRSA_NOTEBOOK_BUDGET=small`` and one thread per kernel, two kernels at a time. They run as
on a fresh clone: no ``TSRSA_DATA_DIR`` and an empty cache folder, so a notebook that reached for
a benchmark file or the network would fail here. IPython's own files go to a temporary folder,
and the test checks that the notebooks wrote nothing into the checkout.

Run as they stand (``medium``, no variable set) each takes well under a minute on two cores;
that is timed by hand, not here, to keep ``make test`` short.
"""
from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "notebooks"
NAMES = ["01_quickstart.ipynb", "02_inside_rsa.ipynb", "03_benchmarks.ipynb", "04_tuning.ipynb",
         "05_many_models.ipynb"]
CELL_TIMEOUT = 240  # seconds; each notebook takes seconds on the small budget
KERNELS_AT_ONCE = 2  # one thread each


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
    assert 'os.environ.get("TSRSA_NOTEBOOK_BUDGET", "medium")' in code[0].source  # read first; medium unless set
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    notes = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    assert any("**The full version**" in note for note in notes)  # how to run the long version


#: what the test tools themselves write into the root; `make test` runs other test files beside the
#: notebooks, and hypothesis makes its example database on its first use
TOOL_FOLDERS = {".hypothesis", ".pytest_cache"}


def _checkout_files() -> set[str]:
    """Files in notebooks/ (the notebooks' working folder) and the repository root."""
    return ({p.name for p in ROOT.iterdir()} - TOOL_FOLDERS) | {f"notebooks/{p.name}" for p in FOLDER.iterdir()}


async def _run_all(env: dict, scratch: Path) -> dict:
    """name -> (executed notebook, seconds, the error or None), ``KERNELS_AT_ONCE`` at a time."""
    gate = asyncio.Semaphore(KERNELS_AT_ONCE)

    async def run(name: str):
        nb = nbformat.read(FOLDER / name, as_version=4)
        client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                         resources={"metadata": {"path": str(FOLDER)}})
        ipython = scratch / "ipython" / name.removesuffix(".ipynb")  # the kernel's history and profile
        ipython.mkdir(parents=True)
        kernel_env = {**env, "IPYTHONDIR": str(ipython)}
        async with gate:
            began = time.perf_counter()
            try:
                await client.async_execute(env=kernel_env)
                error = None
            except Exception as failure:  # CellExecutionError carries the cell's traceback
                error = failure
            return name, (nb, time.perf_counter() - began, error)

    return dict(await asyncio.gather(*(run(name) for name in NAMES)))


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("notebooks")
    env = {key: value for key, value in os.environ.items() if key != "TSRSA_DATA_DIR"}
    env.update(TSRSA_NOTEBOOK_BUDGET="small", OMP_NUM_THREADS="1", XDG_CACHE_HOME=str(scratch / "cache"))
    with pytest.MonkeyPatch.context() as patch:  # where this process looks for the kernel and its files
        patch.setenv("JUPYTER_RUNTIME_DIR", str(scratch / "runtime"))
        patch.setenv("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))  # this environment's kernel
        before = _checkout_files()
        runs = asyncio.run(_run_all(env, scratch))
        written = _checkout_files() - before
    return runs, written


@pytest.mark.processes
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_on_the_small_budget(name, executed):
    runs, _ = executed
    nb, seconds, error = runs[name]
    print(f"{name}: {seconds:.1f} s")
    if error is not None:
        raise error
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    warnings_seen = [out.text for out in outputs if out.output_type == "stream" and out.name == "stderr"]
    assert not warnings_seen, warnings_seen  # the notebooks run clean
    assert any("image/png" in out.get("data", {}) for out in outputs)  # each draws something


@pytest.mark.processes
def test_the_notebooks_write_nothing_into_the_checkout(executed):
    _, written = executed
    assert not written, written
