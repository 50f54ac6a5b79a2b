"""A panel on disk as Parquet files partitioned by series, read one share at a time.

A panel too large for one process's memory is kept as a folder of Parquet files in which every
series lies whole in one file (a long frame's rows: id, time, target, and any covariates). A
process that is one rank of ``world_size`` reads only the files of its share; the files are dealt
out by their row counts, read from the files' footers without reading their data, largest first
to the rank that has the fewest rows so far, so every rank computes the same split and the shares
hold near-equal numbers of rows. A folder written as a Hive partitioning (``unique_id=A/part.parquet``,
what ``DataFrame.to_parquet(partition_cols=[...])`` and Dask write) gets the partition column back
from the folder names.

:func:`write_shards` writes such a folder from a long frame (whole series per file), with a manifest
of what it wrote (:mod:`tsrsa.data.shard_manifest`). Opening a folder checks it before anything is
read: with a manifest, only the files it lists, each whole (size and SHA-256); without one, every
Parquet file must have the declared id, time and target columns. Every file must have the columns
and dtypes of the first; a damaged file is a ValueError naming it.
"""
from __future__ import annotations

import os
import tempfile
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.data.native import to_pandas
from tsrsa.data.shard_manifest import (
    DEFAULT_COLUMNS, MANIFEST, REWRITE, Manifest, check_dtypes, check_same, check_schemas, file_footer,
    listed_files, read_manifest, schema_text, sha256, unreadable, write_manifest,
)

#: the temporary files a write_shards that was killed may leave (replaced by overwrite=True)
LEFTOVER = re.compile(r"\.(part-\d{5}\.parquet\.\w+\.tmp|_tsrsa_shards\.json\.tmp)")


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
    columns: tuple[str, str, str] = DEFAULT_COLUMNS  # the declared id, time and target columns
    schema: tuple = ()  # (column, Arrow type as text) of every file, as opened
    sha256: tuple[str, ...] | None = None  # each file's checksum, from the manifest (None: no manifest)

    @classmethod
    def open(cls, path, *, id_col: str | None = None, time_col: str | None = None,
             target_col: str | None = None) -> "ParquetShards":
        """The Parquet files of folder ``path``, checked.

        With the manifest ``write_shards`` writes, the files it lists (each of its recorded size and
        checksum) and no other; without one, every ``*.parquet`` file under ``path`` (searched
        recursively, in name order), each of which must have the declared columns. ``id_col``,
        ``time_col``, ``target_col``: the declared columns; by default the manifest's, or
        ``unique_id``, ``ds``, ``y``. Every file must have the columns and dtypes of the first, a
        time of datetimes or integers and a numeric target (TypeError otherwise); a missing,
        modified or unreadable file is a ValueError naming it.
        """
        _pyarrow("parquet")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"ParquetShards.open takes the path of a folder, got {type(path).__name__}")
        folder = Path(path)
        if not folder.is_dir():
            raise ValueError(f"{str(folder)!r} is not a folder: give the folder that holds the Parquet files "
                             f"(write one with tsrsa.data.write_shards)")
        manifest = read_manifest(folder)
        columns = _declared(folder, manifest, (id_col, time_col, target_col))
        if manifest is not None:
            files = listed_files(folder, manifest)
        else:
            files = tuple(sorted(f for f in folder.rglob("*.parquet") if f.is_file()))
            if not files:
                raise ValueError(f"no Parquet files (*.parquet) under {str(folder)!r}")
        footers = [file_footer(f, folder) for f in files]
        schemas = [schema for schema, _ in footers]
        check_schemas(files, schemas, columns)
        if manifest is not None:
            _check_against_manifest(folder, manifest, files, footers)
        return cls(folder, files, tuple(rows for _, rows in footers), columns,
                   tuple(schema_text(schemas[0]).items()),
                   None if manifest is None else tuple(entry["sha256"] for entry in manifest.files))

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
        """The long frame of rank ``rank``'s share (every file when alone), Hive partition columns restored.

        Each file is checked again as it is read (its checksum, with a manifest; its columns and
        dtypes against those the folder was opened with), so a file changed since ``open`` is refused.
        """
        pa, ds = _pyarrow(""), _pyarrow("dataset")
        files = self.share(rank, world_size)
        for f in files:
            self._recheck(f)
        try:
            dataset = ds.dataset([str(f) for f in files], format="parquet", partition_base_dir=str(self.path),
                                 partitioning=None if self.sha256 is not None else "hive")
            fragments = list(dataset.get_fragments())
            schema = pa.unify_schemas([dataset.schema, *(f.physical_schema for f in fragments)],
                                      promote_options="default")  # a column of nulls in one file: the others' type
        except (pa.ArrowException, OSError, ValueError) as error:
            raise ValueError(f"the Parquet files of {self.path} cannot be read together ({error}); {REWRITE}") \
                from error
        tables = []
        for fragment in fragments:
            try:
                tables.append(fragment.to_table(schema=schema, columns=columns))
            except (pa.ArrowException, OSError, ValueError) as error:
                raise unreadable(Path(fragment.path), error) from error
        try:  # the pandas metadata of the first file (the dtypes pandas wrote) rules the conversion
            frame = pa.concat_tables(tables).to_pandas()
        except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError) as error:
            raise unreadable(files[0], error) from error
        for name in frame.columns:  # a Hive partition column comes back as a dictionary (categorical)
            if isinstance(frame[name].dtype, pd.CategoricalDtype):
                frame[name] = frame[name].astype(frame[name].cat.categories.dtype)
        return frame

    def _recheck(self, path: Path) -> None:
        """ValueError when the file at ``path`` changed since the folder was opened."""
        if self.sha256 is not None:
            index = self.files.index(path)
            if not path.is_file() or sha256(path) != self.sha256[index]:
                raise ValueError(f"{path} changed since the folder was opened (its checksum differs from the "
                                 f"one in {self.path / MANIFEST}); open the folder again, or {REWRITE}")
            return
        schema, _ = file_footer(path, self.path)
        check_dtypes(path, schema, self.columns)
        check_same(path, schema, self.files[0], dict(self.schema), what="changed since the folder was opened, "
                   "and no longer matches")


def _declared(folder: Path, manifest: Manifest | None, given: tuple) -> tuple[str, str, str]:
    """The declared id, time and target columns: those ``given`` (None: the manifest's, or the defaults)."""
    recorded = manifest.columns if manifest is not None else DEFAULT_COLUMNS
    for name, value, kept in zip(("id_col", "time_col", "target_col"), given, recorded):
        if value is not None and not (isinstance(value, str) and value):
            raise TypeError(f"{name} must be a column name (a non-empty str), got {value!r}")
        if value is not None and manifest is not None and value != kept:
            raise ValueError(f"{folder} was written with {name}={kept!r} (its {MANIFEST}), not {value!r}: leave "
                             f"{name} out, or write the folder again with write_shards(..., {name}={value!r})")
    return tuple(value if value is not None else kept for value, kept in zip(given, recorded))


def _check_against_manifest(folder: Path, manifest: Manifest, files, footers) -> None:
    """The files' schema and rows are those the manifest records."""
    for path, entry, (schema, rows) in zip(files, manifest.files, footers):
        if schema_text(schema) != manifest.schema or rows != entry["rows"]:
            raise ValueError(f"{path} does not hold what {folder / MANIFEST} records (its columns, dtypes or rows "
                             f"differ); {REWRITE}")


def _pyarrow(part: str):
    """``pyarrow.<part>`` (``pyarrow`` itself for ""), or an ImportError that says how to install it."""
    import importlib

    try:
        return importlib.import_module(f"pyarrow.{part}" if part else "pyarrow")
    except ImportError as error:
        raise ImportError("Parquet shards are read with pyarrow: pip install 'tsrsa[parquet]'") from error


def write_shards(df: pd.DataFrame, path, *, id_col: str = "unique_id", time_col: str = "ds",
                 target_col: str = "y", n_files: int = 8, overwrite: bool = False) -> ParquetShards:
    """Write long frame ``df`` (pandas, polars or pyarrow) to folder ``path`` as ``n_files`` Parquet files,
    each series whole in one.

    Series are dealt out in order of first appearance, near-equal numbers of rows per file
    (``part-00000.parquet``, ...), beside a manifest (``_tsrsa_shards.json``: the declared columns,
    the schema, and each file's rows, series and checksum) that ``ParquetShards.open`` reads. ``df``
    is checked whole before anything is written (a time of datetimes or integers, a numeric target,
    every id given) and is not changed. ``overwrite=True`` replaces the files of an earlier
    ``write_shards`` and refuses a folder that holds anything else. Returns the folder, opened.
    """
    table, codes, n_series = _checked_table(df, id_col, time_col, target_col, n_files)
    folder = Path(path)
    previous = _replaceable(folder, overwrite)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = np.bincount(codes, minlength=n_series)  # rows per series
    n = min(int(n_files), n_series)
    before = np.cumsum(sizes) - sizes  # rows ahead of each series, in order
    which = (before * n) // max(int(sizes.sum()), 1)  # the file of each series: non-decreasing, < n
    file_of_row = which[codes]
    order = np.argsort(file_of_row, kind="stable")  # the rows of file 0, then of file 1, ... in the frame's order
    counts, series = np.bincount(file_of_row, minlength=n), np.bincount(which, minlength=n)
    ends = np.cumsum(counts)
    entries = []
    for k in range(n):
        rows = order[ends[k] - counts[k]: ends[k]]
        if len(rows):
            name = f"part-{k:05d}.parquet"
            _write_table(table.take(rows), folder / name)
            entries.append({"name": name, "rows": int(len(rows)), "series": int(series[k]),
                            "bytes": (folder / name).stat().st_size, "sha256": sha256(folder / name)})
    for name in previous - {entry["name"] for entry in entries}:
        (folder / name).unlink(missing_ok=True)
    written = file_footer(folder / entries[0]["name"], folder)[0]  # as Parquet keeps it (e.g. large_string: string)
    write_manifest(folder, Manifest((id_col, time_col, target_col), schema_text(written), tuple(entries)))
    return ParquetShards.open(folder)


def _checked_table(df, id_col: str, time_col: str, target_col: str, n_files):
    """``df`` as an Arrow table, with each row's series code and the number of series; nothing written."""
    pa = _pyarrow("")
    df = to_pandas(df)  # a polars or pyarrow frame: as pandas, the user's frame untouched
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"write_shards takes a long DataFrame, got {type(df).__name__}")
    for role, name in (("id", id_col), ("time", time_col), ("target", target_col)):
        if name not in df.columns:
            raise ValueError(f"the frame has no {role} column {name!r} (columns {list(df.columns)[:8]}); pass "
                             f"{role}_col=")
    if not isinstance(n_files, (int, np.integer)) or isinstance(n_files, bool) or n_files < 1:
        raise ValueError(f"n_files must be a positive int, got {n_files!r}")
    if len(set(df.columns)) < df.shape[1] or not all(isinstance(c, str) for c in df.columns):
        raise ValueError(f"Parquet needs distinct column names of text; the frame has {list(df.columns)[:8]}")
    if len(df) == 0:
        raise ValueError("the frame is empty: write_shards needs at least one row")
    codes, ids = pd.factorize(df[id_col], sort=False)
    if (codes < 0).any():
        raise ValueError(f"the id column {id_col!r} holds missing values: every row needs a series id")
    _check_frame_dtypes(df, time_col, target_col)
    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowException, ValueError, TypeError) as error:
        raise TypeError(f"the frame cannot be written to Parquet ({error}); give each column one dtype "
                        f"(e.g. .astype(str) on a column of mixed values)") from error
    check_dtypes("the frame", dict(zip(table.schema.names, table.schema.types)), (id_col, time_col, target_col))
    return table, codes, len(ids)


def _check_frame_dtypes(df: pd.DataFrame, time_col: str, target_col: str) -> None:
    """TypeError, as a fit of ``df`` would raise, when its time holds neither datetimes nor integers or
    its target is not numeric (before Parquet could coerce a column of mixed values)."""
    time, target = df[time_col].dtype, df[target_col].dtype
    dated = isinstance(time, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(time)
    if not dated and not (pd.api.types.is_integer_dtype(time) and not pd.api.types.is_bool_dtype(time)):
        raise TypeError(f"column {time_col!r} must hold datetimes or integers, got dtype {time}; parse it with "
                        f"pd.to_datetime(...) (or cast whole-number times to int64) before writing")
    if not pd.api.types.is_numeric_dtype(target):
        raise TypeError(f"column {target_col!r} must be numeric, got dtype {target}; convert it with "
                        f"pd.to_numeric(..., errors='coerce') before writing, and choose a fill= for the values "
                        f"that fail")


def _replaceable(folder: Path, overwrite: bool) -> set[str]:
    """The names of the files an earlier ``write_shards`` wrote in ``folder``, which ``overwrite=True``
    replaces; ValueError when the folder holds anything else, or anything at all without ``overwrite``."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is a file; give write_shards a folder (it is created when missing)")
    if not folder.exists() or not any(folder.iterdir()):
        return set()
    if not overwrite:
        raise ValueError(f"{str(folder)!r} exists and is not empty; pass overwrite=True to replace the files an "
                         f"earlier write_shards wrote there, or give another folder")
    manifest = read_manifest(folder)
    if manifest is None:
        raise ValueError(f"{str(folder)!r} holds files that write_shards did not write (it has no {MANIFEST}), "
                         f"e.g. {sorted(p.name for p in folder.iterdir())[:5]}; overwrite=True replaces only "
                         f"what write_shards wrote: remove them yourself, or give another folder")
    listed = {entry["name"] for entry in manifest.files}
    others = sorted(p.name for p in folder.iterdir() if p.name not in listed | {MANIFEST} and not (
        p.is_file() and LEFTOVER.fullmatch(p.name)))
    if others:
        raise ValueError(f"{str(folder)!r} holds {others[:5]}, which write_shards did not write; overwrite=True "
                         f"replaces only the files its {MANIFEST} lists: move them out, or give another folder")
    present = [entry for entry in manifest.files if (folder / entry["name"]).exists()]
    listed_files(folder, Manifest(manifest.columns, manifest.schema, tuple(present)),
                 what="changed since write_shards wrote it, so it may not be write_shards' to replace",
                 fix="remove it yourself if it may go, or give another folder")
    for leftover in folder.iterdir():
        if leftover.is_file() and LEFTOVER.fullmatch(leftover.name):
            leftover.unlink()
    return listed


def _write_table(table, path: Path) -> None:
    """Write ``table`` to ``path`` atomically (a temporary file in the same folder, then a rename)."""
    pq = _pyarrow("parquet")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
