"""The store's tests run against SQLite and against a PostgreSQL cluster this session starts itself
(Debian's ``postgresql`` package: initdb + pg_ctl, a unix socket in a temporary directory)."""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")
_databases = itertools.count()


def _as_postgres(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the package's ``postgres`` user."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


@pytest.fixture(scope="session")
def postgres_socket():
    """A throwaway cluster, trust authentication, listening only on a unix socket; its directory."""
    if not (PG_BIN / "initdb").is_file():
        pytest.fail(f"{PG_BIN / 'initdb'} is missing: install Debian's postgresql package "
                    "(apt-get install --no-install-recommends postgresql; scripts/setup.sh does it)")
    # not under pytest's tmp_path: /tmp/pytest-of-root is 0700, the postgres user could not enter it
    base = Path(tempfile.mkdtemp(prefix="farm-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
    data, log = base / "data", base / "log"
    subprocess.run(_as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "farm",
                                 "--no-sync", "-E", "UTF8"]), check=True, capture_output=True)
    start = subprocess.run(_as_postgres([
        str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
        f"-k {base} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
        "start"]), capture_output=True, text=True)
    if start.returncode != 0:
        pytest.fail(f"PostgreSQL did not start: {start.stdout}{start.stderr}\n"
                    f"{log.read_text() if log.exists() else ''}")
    try:
        yield base
    finally:
        subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _new_pg_database(socket: Path) -> str:
    import sqlalchemy as sa

    name = f"farm_test_{os.getpid()}_{next(_databases)}"
    admin = sa.create_engine(f"postgresql+psycopg://farm@/postgres?host={socket}", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"postgresql://farm@/{name}?host={socket}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    """``FARM_DB`` of an empty database: a SQLite file, or a new database on the session's cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    return _new_pg_database(request.getfixturevalue("postgres_socket"))


@pytest.fixture
def store_env(store_url, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("FARM_DB", store_url)
    return {"FARM_DB": store_url}
