"""Saving and loading a set of fitted models (``MultiForecaster``, ``AutoForecaster``) as one folder.

Layout::

    config.json   format version, class name, the set's own parameters, its members (name, class, folder,
                  and the SHA-256 of each member's config.json), the checksum and size of state.json, and
                  the checksum of config.json itself (``config_sha256``, as a single model's)
    state.json    what the set decided at fit (an AutoForecaster's choice table and weights), as JSON
    members/0/    the first member's own saved folder (:mod:`tsrsa.estimator.persistence`), members/1/, ...

Every file is covered: config.json by its own checksum, state.json by the checksum config.json records,
each member's config.json by the checksum the set's config.json records, and the member's other files by
the checksums its config.json records. ``tsrsa.load`` reads config.json, finds the class among tsrsa's
own (a set class says so with ``saves_members = True``) and hands the folder to the class's
``from_folder``, which reads it through :func:`read_set`: anything missing, edited or left from another
model is a ValueError naming the file. Members are named in config.json, never by their folder, so a
user's model name never becomes a path.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tsrsa.estimator.model_folder import CONFIG, CONFIG_LIMIT, MEMBERS, RESTORE, STATE, read_model_file, write_folder
from tsrsa.estimator.persistence import CONFIG_CHECKSUM, FORMAT_VERSION, config_checksum


def save_set(owner, path, *, members: list[tuple[str, object]], params: dict, state: dict,
             overwrite: bool = False) -> None:
    """Write the set ``owner`` to the folder ``path``, all or nothing: each fitted model of ``members``
    ``[(name, model)]`` in a folder of its own, the set's JSON-ready ``params`` and ``state``."""
    from tsrsa._version import __version__
    from tsrsa.estimator.params import check_bool

    check_bool("overwrite", overwrite)
    state_text = json.dumps(state, indent=1)

    def write(folder: Path) -> None:
        listed = []
        for k, (name, model) in enumerate(members):
            model.save(folder / MEMBERS / str(k))
            digest = hashlib.sha256((folder / MEMBERS / str(k) / CONFIG).read_bytes()).hexdigest()
            listed.append({"name": name, "class": type(model).__name__, "folder": f"{MEMBERS}/{k}",
                           "config_sha256": digest})
        (folder / STATE).write_text(state_text)
        config = {"format_version": FORMAT_VERSION, "class": type(owner).__name__, "params": params,
                  MEMBERS: listed, "versions": {"tsrsa": __version__},
                  "files": {STATE: hashlib.sha256((folder / STATE).read_bytes()).hexdigest()},
                  "sizes": {STATE: os.path.getsize(folder / STATE)}}
        config[CONFIG_CHECKSUM] = config_checksum(config)
        (folder / CONFIG).write_text(json.dumps(config, indent=1))

    write_folder(path, write, overwrite=overwrite)


def read_set(directory: Path, config: dict, load_member) -> tuple[dict, list[tuple[str, object]], dict]:
    """(the set's params, its members ``[(name, fitted model)]``, its state) from the folder ``directory``
    whose config.json holds ``config``; ``load_member(folder)`` loads one member (``tsrsa.load``'s checks
    and whitelist). ValueError naming the file for anything missing, edited or foreign."""
    where = directory / CONFIG
    if config.get(CONFIG_CHECKSUM) != config_checksum(config):
        raise ValueError(f"{where} does not match the checksum recorded at saving: it was modified or corrupted; "
                         f"{RESTORE}")
    listed, params, files = config.get(MEMBERS), config.get("params"), config.get("files")
    if not isinstance(listed, list) or not listed or not isinstance(params, dict) or not isinstance(files, dict) \
            or STATE not in files:
        raise ValueError(f"{where} is corrupted: its members, parameters or file list are incomplete")
    sizes = config.get("sizes", {})
    try:
        state = json.loads(read_model_file(directory, STATE, size=sizes.get(STATE), digest=files[STATE]))
    except FileNotFoundError:
        raise ValueError(f"{directory / STATE} is missing; {RESTORE}") from None
    folders = [f"{MEMBERS}/{k}" for k in range(len(listed))]
    present = sorted(entry.name for entry in (directory / MEMBERS).iterdir()) if (directory / MEMBERS).is_dir() else []
    extra = sorted(set(present) - {str(k) for k in range(len(listed))})
    if extra:
        raise ValueError(f"{directory / MEMBERS} holds {', '.join(extra)}, which is not part of the set saved in "
                         f"{directory} (left from another model): remove it, or save the set again into a new folder")
    members = []
    for entry, folder in zip(listed, folders):
        if not isinstance(entry, dict) or entry.get("folder") != folder or not isinstance(entry.get("name"), str):
            raise ValueError(f"{where} is corrupted: member {folder} is not described as saved")
        member_dir = directory / folder
        try:
            content = read_model_file(member_dir, CONFIG, limit=CONFIG_LIMIT)
        except FileNotFoundError:
            raise ValueError(f"{member_dir / CONFIG} is missing; {RESTORE}") from None
        if hashlib.sha256(content).hexdigest() != entry.get("config_sha256"):
            raise ValueError(f"{member_dir / CONFIG} does not match the checksum recorded in {where}: it was "
                             f"modified or corrupted; {RESTORE}")
        model = load_member(member_dir)
        if getattr(type(model), "saves_members", False) or type(model).__name__ != entry.get("class"):
            raise ValueError(f"{member_dir} holds a {type(model).__name__} where {where} records a "
                             f"{entry.get('class')}; {RESTORE}")
        members.append((entry["name"], model))
    return params, members, state
