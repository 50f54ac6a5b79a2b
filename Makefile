# Two entry points, both self-contained on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU build by default (it lies on this machine's disk); a GPU user installs torch into
# $(VENV) first and the install step below leaves it alone.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.tsrsa-installed
# The suite runs its test files on parallel workers, one per core (pytest-xdist), each with one
# torch thread (tests/conftest.py); PYTEST_WORKERS=0 runs it in this one process.
PYTEST_WORKERS ?= auto

.PHONY: demo test test-processes test-slow notebooks install clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/co2_demo.py --output-dir demo_output

# Each notebook as a user runs it (default budget), timed: benchmarks/results/notebook_times.csv
notebooks: $(STAMP)
	$(BIN)/python benchmarks/notebook_times.py

# The suite without the tests that start other processes or servers and without the slow ones (under three
# minutes on two cores); test-processes runs the first (notebook kernels, PostgreSQL, Dask workers, DDP ranks,
# joblib workers), test-slow the second (ONNX exports, ETS's search over a panel); CI runs every tier.
test: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not processes and not slow" $(PYTEST_ARGS)

test-processes: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m processes $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "slow and not processes" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) demo_output .pytest_cache .hypothesis
