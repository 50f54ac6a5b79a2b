"""The folder a model is saved in: what it may hold, and writing it all or nothing.

A save writes every file into a new hidden folder beside the destination and swaps it in with
one rename at the end, so that a save that raises midway leaves the destination as it was (an
earlier model, an empty folder, or nothing) and leaves nothing behind. Only a folder that holds
a saved tsrsa model is ever replaced, and only when asked (``overwrite=True``); a folder that
holds anything else is never written into.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Callable

CONFIG, STATE, ARRAYS, WEIGHTS = "config.json", "state.json", "arrays.npz", "weights.pt"
#: the files a saved model consists of (weights.pt for a model with a network only)
MODEL_FILES = (CONFIG, STATE, ARRAYS, WEIGHTS)

NEW, EMPTY, MODEL = "new", "empty", "model"


def holds_model(folder: Path) -> bool:
    """Whether ``folder`` holds a model saved by tsrsa (its config.json names a format and a class)."""
    try:
        config = json.loads((Path(folder) / CONFIG).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(config, dict) and "format_version" in config and "class" in config


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
    others = [name for name in entries if name not in MODEL_FILES or not (path / name).is_file()]
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
