"""``dir(tsrsa)`` is the package's public names: ``__all__``, nothing of its machinery."""
from __future__ import annotations

import subprocess
import sys

import pytest

import tsrsa


def test_dir_lists_exactly_the_public_names():
    assert dir(tsrsa) == sorted(tsrsa.__all__)
    assert not {"_LAZY", "_SUBMODULES", "importlib", "logging", "annotations"} & set(dir(tsrsa))
    assert {"RSAForecaster", "load", "evaluate", "tune", "nn", "__version__"} <= set(dir(tsrsa))


def test_dir_stays_the_public_names_once_names_are_loaded_and_sub_packages_imported():
    import tsrsa.estimator  # noqa: F401 - sets tsrsa.estimator, which is not one of the public names
    import tsrsa.statistical  # noqa: F401

    assert tsrsa.RSAForecaster.__name__ == "RSAForecaster"  # loaded on first use, kept in the module
    assert dir(tsrsa) == sorted(tsrsa.__all__)


def test_every_public_name_resolves():
    for name in tsrsa.__all__:
        assert getattr(tsrsa, name) is not None, name


@pytest.mark.processes
def test_import_tsrsa_and_its_forecasters_warns_of_nothing():
    code = "import tsrsa, tsrsa.forecasters, tsrsa.estimator.base, tsrsa.start.fit; tsrsa.load; tsrsa.RSAForecaster"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stderr
