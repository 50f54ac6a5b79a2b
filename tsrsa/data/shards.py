"""A panel on disk as Parquet files partitioned by series, read one share at a time.

A panel too large for one process's memory is kept as a folder of Parquet files in which every
series lies whole in one file (a long frame's rows: id, time, target, and any covariates). A
process that is one rank of ``world_size`` reads only the files of its share; the files are dealt
out by their row counts, read from the files' footers without reading their data, largest first
to the rank that has the fewest rows so far, so every rank computes the same split and the shares
hold near-equal numbers of rows. A folder written as a Hive partitioning (``unique_id=A/part.parquet``,
what ``DataFrame.to_parquet(partition_cols=[...])`` and Dask write) gets the partition column back
from the folder names.

:func:`write_shards` writes such a folder from a long frame (whole series per file).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ParquetShards:
    """A folder of Parquet files holding a long frame, every series whole in one file.

    Pass it where a frame goes (``fit``, ``update``, ``cross_validate``): a process alone reads
    every file; each rank of a data-parallel fit (a ``torchrun`` launch, or any initialised
    ``torch.distributed`` group of several ranks) reads only its share of the files.
    """

    path: Path
    files: tuple[Path, ...]
    rows: tuple[int, ...]  # rows of each file, from its footer

    @classmethod
    def open(cls, path) -> "ParquetShards":
        """The Parquet files under folder ``path`` (searched recursively, in name order)."""
        pq = _pyarrow("parquet")
        if not isinstance(path, (str, Path)):
            raise TypeError(f"ParquetShards.open takes the path of a folder, got {type(path).__name__}")
        folder = Path(path)
        if not folder.is_dir():
            raise ValueError(f"{str(folder)!r} is not a folder: give the folder that holds the Parquet files "
                             f"(write one with tsrsa.data.write_shards)")
        files = tuple(sorted(f for f in folder.rglob("*.parquet") if f.is_file()))
        if not files:
            raise ValueError(f"no Parquet files (*.parquet) under {str(folder)!r}")
        return cls(folder, files, tuple(int(pq.ParquetFile(f).metadata.num_rows) for f in files))

    def __len__(self) -> int:
        return len(self.files)

    def share(self, rank: int = 0, world_size: int = 1) -> tuple[Path, ...]:
        """The files of rank ``rank`` of ``world_size`` (every rank computes the same split)."""
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not one of world_size={world_size} ranks")
        if world_size > len(self.files):
            raise ValueError(f"{len(self.files)} Parquet file(s) cannot give each of {world_size} ranks a share: "
                             f"write at least one file per rank (tsrsa.data.write_shards(df, path, n_files=...))")
        load = np.zeros(world_size, dtype=np.int64)
        owner = np.empty(len(self.files), dtype=np.int64)
        for i in sorted(range(len(self.files)), key=lambda i: (-self.rows[i], i)):  # largest first
            owner[i] = int(np.argmin(load))  # the lowest rank among the least loaded
            load[owner[i]] += self.rows[i]
        return tuple(f for f, r in zip(self.files, owner) if r == rank)

    def read(self, rank: int = 0, world_size: int = 1, columns=None) -> pd.DataFrame:
        """The long frame of rank ``rank``'s share (every file when alone), Hive partition columns restored."""
        ds = _pyarrow("dataset")
        files = self.share(rank, world_size)
        dataset = ds.dataset([str(f) for f in files], format="parquet", partitioning="hive",
                             partition_base_dir=str(self.path))
        frame = dataset.to_table(columns=columns).to_pandas()
        for name in frame.columns:  # a Hive partition column comes back as a dictionary (categorical)
            if isinstance(frame[name].dtype, pd.CategoricalDtype):
                frame[name] = frame[name].astype(frame[name].cat.categories.dtype)
        return frame


def _pyarrow(part: str):
    """``pyarrow.<part>``, or an ImportError that says how to install it."""
    import importlib

    try:
        return importlib.import_module(f"pyarrow.{part}")
    except ImportError as error:
        raise ImportError("Parquet shards are read with pyarrow: pip install 'tsrsa[parquet]'") from error


def write_shards(df: pd.DataFrame, path, *, id_col: str = "unique_id", n_files: int = 8,
                 overwrite: bool = False) -> ParquetShards:
    """Write long frame ``df`` to folder ``path`` as ``n_files`` Parquet files, each series whole in one.

    Series are dealt out in order of first appearance, near-equal numbers of rows per file
    (``part-00000.parquet``, ...); ``df`` is not changed. Returns the folder, opened.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"write_shards takes a long DataFrame, got {type(df).__name__}")
    if id_col not in df.columns:
        raise ValueError(f"the frame has no id column {id_col!r} (columns {list(df.columns)[:8]}); pass id_col=")
    if not isinstance(n_files, (int, np.integer)) or isinstance(n_files, bool) or n_files < 1:
        raise ValueError(f"n_files must be a positive int, got {n_files!r}")
    folder = Path(path)
    if folder.exists() and any(folder.iterdir()) and not overwrite:
        raise ValueError(f"{str(folder)!r} exists and is not empty; pass overwrite=True to replace its Parquet files")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("part-*.parquet"):
        old.unlink()
    codes, ids = pd.factorize(df[id_col], sort=False)
    if (codes < 0).any():
        raise ValueError(f"the id column {id_col!r} holds missing values: every row needs a series id")
    sizes = np.bincount(codes, minlength=len(ids))  # rows per series
    n = min(int(n_files), len(ids))
    before = np.cumsum(sizes) - sizes  # rows ahead of each series, in order
    which = (before * n) // max(int(sizes.sum()), 1)  # the file of each series: non-decreasing, < n
    file_of_row = which[codes]
    for k in range(n):
        part = df.loc[file_of_row == k]
        if len(part):
            part.to_parquet(folder / f"part-{k:05d}.parquet", index=False)
    return ParquetShards.open(folder)
