"""A throwaway PostgreSQL server for tests: ``initdb`` in a fresh folder, one local TCP port, trust
authentication, one database; :func:`postgres_server` yields its SQLAlchemy URL and removes it all.

Run as root, the server runs as the ``postgres`` system user (``initdb`` refuses root), or as
``nobody`` where there is no such user.
"""
from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

#: where Debian and Ubuntu put the server binaries (one folder per major version)
DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin"


def server_binaries() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None where there is none."""
    candidates = [Path(p) for p in sorted(glob.glob(DEBIAN_BINARIES), reverse=True)]
    found = shutil.which("pg_ctl")
    if found:
        candidates.insert(0, Path(found).resolve().parent)
    for folder in candidates:
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def free_port() -> int:
    """A local TCP port that nothing listens on (the system's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_user() -> str | None:
    """The unprivileged user to run the server as when this process is root (None: as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root, and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as")


def as_user(user: str | None, command: list[str]) -> list[str]:
    """``command`` run as ``user`` (through runuser, or su where runuser is missing)."""
    if user is None:
        return command
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *command]
    return ["su", user, "-s", "/bin/sh", "-c", shlex.join(command)]


def run(command: list[str], what: str, log: Path | None = None) -> None:
    """Run ``command``; a failure raises RuntimeError with its output (and the server's log)."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        server_log = log.read_text(errors="replace") if log is not None and log.exists() else ""
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stdout}{done.stderr}{server_log}")


@contextlib.contextmanager
def postgres_server(binaries: Path, database: str = "tsrsa") -> Iterator[str]:
    """Start a server, create ``database`` and yield ``postgresql+psycopg://postgres@127.0.0.1:PORT/database``.

    The data folder, log and unix socket live in a fresh temporary folder; on exit the server is
    stopped (``pg_ctl stop -m fast``) and the folder removed.
    """
    import psycopg

    user = server_user()
    # not under pytest's tmp_path: its parents are private to root, where the server user cannot reach
    folder = Path(tempfile.mkdtemp(prefix="tsrsa-pg-"))
    data, log, port = folder / "data", folder / "server.log", free_port()
    pg_ctl = as_user(user, [str(binaries / "pg_ctl"), "-D", str(data), "-s", "-w"])
    try:
        if user is not None:
            shutil.chown(folder, user=user)
        run(as_user(user, [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                           "--locale=C", "--no-sync"]), "initdb")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={folder} -c fsync=off"
        run([*pg_ctl, "-t", "60", "-l", str(log), "-o", options, "start"], "pg_ctl start", log)
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                             autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{database}"')
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{database}"
    finally:
        try:
            if (data / "postmaster.pid").exists():  # also after a start that timed out
                run([*pg_ctl, "-m", "fast", "stop"], "pg_ctl stop", log)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
