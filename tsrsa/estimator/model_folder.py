"""The folder a model is saved in: what it may hold, and writing it all or nothing.

A save writes every file into a new hidden folder beside the destination and swaps it in with
one rename at the end, so that a save that raises midway leaves the destination as it was (an
earlier model, an empty folder, or nothing) and leaves nothing behind. Only a folder that holds
a saved tsrsa model is ever replaced, and only when asked (``overwrite=True``); a folder that
holds anything else is never written into.

Reading a folder (:func:`read_model_file`, what ``tsrsa.load`` reads through) takes regular files
inside it only: a link is followed only to a regular file inside the folder (never out of it), a
device, pipe or socket is refused before it is read (a link to /dev/zero would read until memory
ran out, a pipe would wait for ever), and no file is read past a bound: config.json past
:data:`CONFIG_LIMIT`, the other files past the size config.json records for them (``sizes``; a
folder saved before tsrsa recorded sizes has its checksums only, and its files are checked against
them in chunks before one is read whole). The folder itself may be a link.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Callable

CONFIG, STATE, ARRAYS, WEIGHTS = "config.json", "state.json", "arrays.npz", "weights.pt"
#: the files a saved model consists of (weights.pt for a model with a network only)
MODEL_FILES = (CONFIG, STATE, ARRAYS, WEIGHTS)
#: the folder of a saved set of models (:mod:`tsrsa.estimator.set_folder`) that holds each model's own folder
MEMBERS = "members"
#: the most bytes config.json may hold (parameters, versions, checksums: a few KiB in practice)
CONFIG_LIMIT = 16 * 2 ** 20
#: what to do about a file that was changed after saving
RESTORE = "restore the files as they were saved, or fit and save the model again"

NEW, EMPTY, MODEL = "new", "empty", "model"


def holds_model(folder: Path) -> bool:
    """Whether ``folder`` holds a model saved by tsrsa (its config.json names a format and a class)."""
    try:
        config = json.loads(read_model_file(Path(folder), CONFIG, limit=CONFIG_LIMIT))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(config, dict) and "format_version" in config and "class" in config


def _holds_members(folder: Path) -> bool:
    """Whether ``folder`` holds a saved set of models (its config.json lists members)."""
    try:
        config = json.loads(read_model_file(Path(folder), CONFIG, limit=CONFIG_LIMIT))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(config, dict) and isinstance(config.get(MEMBERS), list)


def folder_path(path, call: str = "tsrsa.load") -> Path:
    """``path`` (a str or an ``os.PathLike``) as a Path; TypeError naming ``call`` for anything else."""
    if isinstance(path, (str, os.PathLike)):
        name = os.fspath(path)
        return Path(os.fsdecode(name) if isinstance(name, bytes) else name)
    raise TypeError(f"{call} takes the path of a model folder, a str or a pathlib.Path (e.g. "
                    f"{call}('model_dir')); got {path!r} ({type(path).__name__})")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _open_inside(directory: Path, name: str) -> int:
    """A descriptor of the file ``name`` of ``directory``, opened without blocking and without following a
    last link (a link inside the folder is resolved first and must stay in it); FileNotFoundError when
    it is missing, ValueError when it leads out of the folder."""
    path = directory / name
    info = os.lstat(path)  # FileNotFoundError: missing
    if stat.S_ISLNK(info.st_mode):
        root, target = directory.resolve(), path.resolve()
        if target.parent != root:
            raise ValueError(f"{path} is a link to {target}, outside the folder: a saved model is read from the "
                             f"files of its folder only; put the file itself there (cp -L), or save the model again")
        path = target
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    return os.open(path, flags)


def read_model_file(directory: Path, name: str, *, size: int | None = None, digest: str | None = None,
                    limit: int | None = None) -> bytes:
    """The bytes of the file ``name`` of the model folder ``directory``, read only when it is a regular
    file inside the folder of at most ``limit`` bytes, of exactly ``size`` bytes (when config.json records
    its size) and of SHA-256 ``digest`` (when given: checked in chunks before the file is read whole when
    its size is not recorded).

    Raises
    ------
    FileNotFoundError
        When the file is missing.
    ValueError
        Naming the file: a link out of the folder, a device, pipe or folder, a size other than the one
        recorded or above ``limit``, a checksum other than ``digest``, a file that changed as it was read.
    """
    path = directory / name
    try:
        fd = _open_inside(directory, name)
    except OSError as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{path} cannot be opened ({err.strerror or err}); a saved model is read from the "
                         f"regular files of its folder: {RESTORE}") from err
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is {_kind(info.st_mode)}, not a regular file: a saved model is read from the "
                             f"regular files of its folder only; {RESTORE}")
        if size is not None and info.st_size != size:
            raise ValueError(f"{path} does not match the checksum recorded at saving (it holds {info.st_size} "
                             f"bytes where {size} were saved): it was modified or corrupted; {RESTORE}")
        if limit is not None and info.st_size > limit:
            raise ValueError(f"{path} holds {info.st_size} bytes, more than the {limit} a {name} of a saved model "
                             f"may hold: it is not one written by tsrsa; {RESTORE}")
        if digest is not None and size is None:  # no size recorded: the checksum first, in bounded memory
            if _sha256_of(handle) != digest:
                raise _changed(path)
            handle.seek(0)
        data = handle.read(info.st_size + 1)  # one byte more than it holds, to see a file that grows
    if len(data) != info.st_size:
        raise ValueError(f"{path} changed while it was read; {RESTORE}")
    if digest is not None and size is not None and hashlib.sha256(data).hexdigest() != digest:
        raise _changed(path)
    return data


def _sha256_of(handle) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _changed(path: Path) -> ValueError:
    return ValueError(f"{path} does not match the checksum recorded at saving: it was modified or corrupted; "
                      f"{RESTORE}")


def check_destination(path, *, overwrite: bool = False) -> str:
    """What ``path`` is as the folder of a model about to be saved: NEW (nothing there yet), EMPTY
    (an empty folder) or MODEL (a saved tsrsa model, to be replaced); ValueError when it may not be
    written: a file, a folder that holds anything but a tsrsa model, or a model without ``overwrite``."""
    path = Path(path)
    if not path.exists():
        if path.is_symlink():
            raise ValueError(f"{path} is a link to nothing; save to a new or empty folder")
        return NEW
    if not path.is_dir():
        raise ValueError(f"{path} is a file; save the model to a folder (a new or empty one)")
    entries = sorted(entry.name for entry in path.iterdir())
    if not entries:
        return EMPTY
    if not holds_model(path):
        raise ValueError(
            f"{path} is a folder that is not empty ({_listed(entries)}) and holds no saved tsrsa model; "
            f"save to a new or empty folder (overwrite=True replaces a saved tsrsa model only, never other files)")
    if not overwrite:
        raise ValueError(f"{path} already holds a saved tsrsa model; pass overwrite=True to replace it, "
                         f"or save to a new folder")
    members = _holds_members(path)
    others = [name for name in entries if not ((name in MODEL_FILES and (path / name).is_file())
                                               or (members and name == MEMBERS and (path / name).is_dir()))]
    if others:
        raise ValueError(
            f"{path} holds a saved tsrsa model and other files ({_listed(others)}); overwrite=True replaces the "
            f"whole folder and never deletes files tsrsa did not write: move them out, or save to a new folder")
    return MODEL


def write_folder(path, write: Callable[[Path], None], *, overwrite: bool = False) -> None:
    """Call ``write(folder)`` to fill a new folder and put it at ``path``, all or nothing.

    ``path`` is checked first (:func:`check_destination`); its missing parent folders are created.
    When ``write`` or the swap raises, the hidden folder and any parent created here are removed and
    whatever was at ``path`` is left as it was.
    """
    path = Path(path)
    if path.is_symlink() and path.exists():  # replace what the link points to; the link stays
        path = path.resolve()
    kind = check_destination(path, overwrite=overwrite)
    created = _first_missing(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(path, "saving", make=True)
    try:
        write(staging)
        _swap(staging, path, kind)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(path.parent, created)
        raise


def _swap(staging: Path, path: Path, kind: str) -> None:
    """Put the folder ``staging`` at ``path`` (nothing there, an empty folder, or a model to replace)."""
    if kind == NEW:
        os.rename(staging, path)
        return
    if kind == EMPTY:
        path.rmdir()
        try:
            os.rename(staging, path)
        except BaseException:
            path.mkdir(exist_ok=True)
            raise
        return
    old = _sibling(path, "replaced", make=False)
    os.rename(path, old)
    try:
        os.rename(staging, path)
    except BaseException:
        os.rename(old, path)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _sibling(path: Path, purpose: str, *, make: bool) -> Path:
    """A hidden name beside ``path`` that nothing uses (the folder itself when ``make``; the user's umask
    applies, as to any folder created by name)."""
    while True:
        candidate = path.parent / f".{path.name}.tsrsa-{purpose}-{secrets.token_hex(4)}"
        if not make:
            if not os.path.lexists(candidate):
                return candidate
            continue
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder on the way to ``folder`` that does not exist yet (None: it exists)."""
    missing = None
    while not folder.exists():
        missing, folder = folder, folder.parent
    return missing


def _remove_empty(folder: Path, created: Path | None) -> None:
    """Remove the folders from ``folder`` up to ``created`` (those this save made), if they are empty."""
    if created is None:
        return
    while True:
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == created:
            return
        folder = folder.parent


def _listed(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
