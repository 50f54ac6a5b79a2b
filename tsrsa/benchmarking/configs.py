"""Versioned benchmark configurations: one JSON file per model under ``benchmarks/configs/``.

A file names the estimator class and its hyperparameters::

    {
      "estimator": "DLinearForecaster",        # a tsrsa forecaster class (whitelisted)
      "params": {...},                          # the "default" variant, the one README quotes
      "datasets": {"ETTh2": {...}},             # per-data-set settings (all variants)
      "variants": {"lr1e-4": {...}}             # named non-default options, on top of params
    }

The harness itself sets ``h``, ``input_size``, ``val_size``, ``random_state``, ``num_threads``,
``accelerator`` and ``verbose``; a file never does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

#: arguments that belong to the protocol and the run, never to a configuration file
HARNESS_PARAMS = ("h", "input_size", "val_size", "random_state", "num_threads", "accelerator", "verbose")


@dataclass
class ModelConfig:
    name: str  # the short name used on the command line (the file's stem)
    estimator: str  # forecaster class name
    params: dict = field(default_factory=dict)
    datasets: dict = field(default_factory=dict)
    variants: dict = field(default_factory=dict)
    path: Path | None = None

    def params_for(self, dataset: str, variant: str = "default") -> dict:
        """Hyperparameters of ``variant`` on ``dataset``: params, then dataset, then variant."""
        if variant != "default" and variant not in self.variants:
            raise ValueError(
                f"{self.name} has no variant {variant!r}; known: {['default', *sorted(self.variants)]}"
                f" (add it under 'variants' in {self.path})"
            )
        out = dict(self.params)
        out.update(self.datasets.get(dataset, {}))
        if variant != "default":
            out.update(self.variants[variant])
        return out

    def estimator_class(self):
        """The forecaster class, looked up among tsrsa's own forecasters only."""
        from tsrsa.forecasters import FORECASTERS

        classes = {cls.__name__: cls for cls in FORECASTERS}
        if self.estimator not in classes:
            raise ValueError(f"{self.path}: unknown estimator {self.estimator!r}; use one of {sorted(classes)}")
        return classes[self.estimator]


def load_config(name: str, config_dir) -> ModelConfig:
    """Read ``<config_dir>/<name>.json`` (``name`` as on the command line, e.g. "DLinear")."""
    path = Path(config_dir) / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in Path(config_dir).glob("*.json"))
        raise ValueError(f"no configuration {path}; known models: {known}")
    raw = json.loads(path.read_text())
    unknown = set(raw) - {"estimator", "params", "datasets", "variants", "notes"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    config = ModelConfig(name=name, estimator=raw["estimator"], params=raw.get("params", {}),
                         datasets=raw.get("datasets", {}), variants=raw.get("variants", {}), path=path)
    for where, params in [("params", config.params), *[(f"datasets.{k}", v) for k, v in config.datasets.items()],
                          *[(f"variants.{k}", v) for k, v in config.variants.items()]]:
        reserved = sorted(set(params) & set(HARNESS_PARAMS))
        if reserved:
            raise ValueError(f"{path}: {where} sets {reserved}, which the harness sets itself")
    return config
