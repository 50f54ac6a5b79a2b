"""What makes a folder of Parquet shards safe to read: its manifest, and the checks of its files.

:func:`tsrsa.data.write_shards` writes ``_tsrsa_shards.json`` beside its files: the declared id, time
and target columns, the schema (column -> Arrow type), and for every file its name, rows, series,
size in bytes and SHA-256, with a checksum of the manifest itself. A folder with a manifest is read
from the files it lists and nothing else; one without (a Hive partitioning, a folder written by an
earlier tsrsa) is read only when every Parquet file in it has the declared columns. In both cases
every file's columns and dtypes must match the first file's, the target must be numeric and the time
datetimes or integers, as in a frame. Parquet readers (pyarrow, Dask, Spark) skip names that start
with ``_``, so the manifest is no data to them.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "_tsrsa_shards.json"
FORMAT = "tsrsa-parquet-shards"
VERSION = 1
#: the declared columns of a folder without a manifest, unless ParquetShards.open is told others
DEFAULT_COLUMNS = ("unique_id", "ds", "y")
#: what every file's entry in the manifest holds
ENTRY = {"name": str, "rows": int, "series": int, "bytes": int, "sha256": str}
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=-]*\.parquet")
_HEX = re.compile(r"[0-9a-f]{64}")
REWRITE = "rewrite the folder with tsrsa.data.write_shards(df, path, overwrite=True)"


@dataclass(frozen=True)
class Manifest:
    """The contents of a folder's ``_tsrsa_shards.json``."""

    columns: tuple[str, str, str]  # id, time, target
    schema: dict  # column -> Arrow type, as text
    files: tuple[dict, ...]  # one ENTRY per file, in the order of the folder's files

    def to_json(self) -> dict:
        body = {"format": FORMAT, "version": VERSION, "id_col": self.columns[0], "time_col": self.columns[1],
                "target_col": self.columns[2], "schema": dict(self.schema), "files": [dict(f) for f in self.files]}
        return {**body, "manifest_sha256": json_checksum(body)}


def json_checksum(body: dict) -> str:
    """SHA-256 of ``body`` as canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sha256(path: Path) -> str:
    """SHA-256 of the file at ``path``, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of ``folder``, None when it has none; ValueError naming it when it is damaged."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} is not a readable shards manifest ({error}); {REWRITE}, or remove the "
                         f"manifest to read the folder's files as they are") from error
    problem = _manifest_problem(data)
    if problem:
        raise ValueError(f"{path} is not a valid shards manifest: {problem}; {REWRITE}, or remove the manifest "
                         f"to read the folder's files as they are")
    return Manifest((data["id_col"], data["time_col"], data["target_col"]), data["schema"], tuple(data["files"]))


def _manifest_problem(data) -> str:
    """What is wrong with the parsed manifest ``data`` ("" when nothing)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"it does not say format {FORMAT!r}"
    if data.get("version") != VERSION:
        return f"format version {data.get('version')!r} is not {VERSION}, the one this tsrsa reads"
    if data.get("manifest_sha256") != json_checksum({k: v for k, v in data.items() if k != "manifest_sha256"}):
        return "it does not match its own checksum (it was edited or damaged)"
    columns = [data.get(k) for k in ("id_col", "time_col", "target_col")]
    if not all(isinstance(c, str) and c for c in columns) or len(set(columns)) < 3:
        return f"the declared columns {columns} are not three distinct names"
    schema, files = data.get("schema"), data.get("files")
    if not isinstance(schema, dict) or not all(isinstance(t, str) for t in schema.values()):
        return "its schema is not a mapping of column names to types"
    if not isinstance(files, list) or not files:
        return "it lists no files"
    for entry in files:
        if not isinstance(entry, dict) or set(entry) != set(ENTRY) or not all(
                type(entry[k]) is t and (t is str or entry[k] >= 0) for k, t in ENTRY.items()):
            return f"the entry {str(entry)[:80]} is not {{name, rows, series, bytes, sha256}}"
        if not _FILE_NAME.fullmatch(entry["name"]) or not _HEX.fullmatch(entry["sha256"]):
            return f"the entry {entry['name'][:80]!r} is not a plain Parquet file name with a SHA-256"
    if len({entry["name"] for entry in files}) < len(files):
        return "it lists a file twice"
    return ""


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write ``manifest`` into ``folder`` atomically (a temporary file, then a rename)."""
    tmp = folder / f".{MANIFEST}.tmp"
    try:
        tmp.write_text(json.dumps(manifest.to_json(), indent=1), encoding="utf-8")
        tmp.replace(folder / MANIFEST)
    finally:
        tmp.unlink(missing_ok=True)


def listed_files(folder: Path, manifest: Manifest, *, what: str = "was modified or damaged after write_shards "
                 "wrote it", fix: str = REWRITE) -> tuple[Path, ...]:
    """The files ``manifest`` lists, each checked to exist with its recorded size and checksum."""
    files = []
    for entry in manifest.files:
        path = folder / entry["name"]
        if not path.is_file():
            raise ValueError(f"{path} is listed in {folder / MANIFEST} but missing; restore it or {fix}")
        if path.stat().st_size != entry["bytes"] or sha256(path) != entry["sha256"]:
            raise ValueError(f"{path} does not match the checksum in {folder / MANIFEST}: it {what}; {fix}")
        files.append(path)
    return tuple(files)


def file_footer(path: Path, folder: Path):
    """(columns -> Arrow type, rows) of the Parquet file at ``path`` from its footer, Hive partition
    keys of its sub-folders (``key=value``) added as columns of type None; ValueError naming a file
    that is not readable Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
        schema = metadata.schema.to_arrow_schema()
        schema.pandas_metadata  # noqa: B018 - parsed here, so that damaged pandas metadata names its file
    except (pa.ArrowException, OSError, ValueError, IndexError) as error:
        raise unreadable(path, error) from error
    columns = {field.name: field.type for field in schema}
    for part in path.relative_to(folder).parts[:-1]:
        if "=" in part:
            columns.setdefault(part.split("=", 1)[0], None)
    return columns, int(metadata.num_rows)


def unreadable(path: Path, error: BaseException) -> ValueError:
    return ValueError(f"{path} is not a readable Parquet file ({type(error).__name__}: {str(error)[:200]}); "
                      f"{REWRITE}, or move the file out of the folder")


def check_schemas(files, schemas, columns) -> None:
    """Every file has the declared ``columns`` (id, time, target) with a time of datetimes or integers
    and a numeric target, and the columns and dtypes of the first file."""
    first = None
    for path, schema in zip(files, schemas):
        missing = [c for c in columns if c not in schema]
        if missing:
            raise ValueError(
                f"{path} has no column(s) {missing} (it has {list(schema)[:8]}): a folder of shards holds long "
                f"frames with the columns {list(columns)}. Name yours with ParquetShards.open(path, id_col=, "
                f"time_col=, target_col=), or move Parquet files of other data out of the folder")
        check_dtypes(path, schema, columns)
        if first is None:
            first = (path, schema_text(schema))
        else:
            check_same(path, schema, *first)


def check_same(path, schema: dict, first_path, first: dict, *, what: str = "does not match") -> None:
    """ValueError when ``schema`` (of the file at ``path``) differs from ``first`` (text, of ``first_path``)."""
    difference = schema_difference(schema_text(schema), first)
    if difference:
        raise ValueError(f"{path} {what} {first_path}: {difference}; every file of a folder of shards needs the "
                         f"same columns and dtypes (cast the columns before writing, or {REWRITE})")


def check_dtypes(path, schema, columns) -> None:
    """TypeError when the time column of ``schema`` holds neither datetimes nor integers or the target
    is not numeric (the refusals of a frame with such columns)."""
    import pyarrow as pa

    _, time, target = columns
    kind = schema[time]
    if kind is not None and not (pa.types.is_timestamp(kind) or pa.types.is_integer(kind)):
        raise TypeError(f"column {time!r} of {path} must hold datetimes or integers, got {kind}; parse it with "
                        f"pd.to_datetime(...) (or cast whole-number times to int64) before writing")
    kind = schema[target]
    if kind is not None and not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                                 or pa.types.is_boolean(kind)):
        raise TypeError(f"column {target!r} of {path} must be numeric, got {kind}; convert it with "
                        f"pd.to_numeric(..., errors='coerce') before writing, and choose a fill= for the values "
                        f"that fail")


def schema_difference(schema: dict, first: dict) -> str:
    """How ``schema`` differs from ``first``, both as text (:func:`schema_text`): columns missing, extra,
    or of another dtype ("" when none). A column of nulls only (all missing in one file) matches any
    dtype; a Hive partition key (None) only another."""
    missing = [c for c in first if c not in schema]
    if missing:
        return f"it has no column(s) {missing}"
    extra = [c for c in schema if c not in first]
    if extra:
        return f"it has the extra column(s) {extra}"
    for name, kind in first.items():
        other = schema[name]
        if other != kind and not (None not in (other, kind) and "null" in (other, kind)):
            return f"column {name!r} is {other} here and {kind} there"
    return ""


def schema_text(schema: dict) -> dict:
    """``schema`` with its Arrow types as text (what the manifest records; None stays None)."""
    return {name: None if kind is None else str(kind) for name, kind in schema.items()}
