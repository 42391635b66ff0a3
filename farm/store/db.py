"""Which database, opening it, and bringing its schema up to date.

``FARM_DB`` chooses: unset or empty → SQLite at ``~/.local/share/farm/results.db`` (beside the
baselines); ``none`` (or ``off``) → no store (runs are not ingested, history commands refuse); a
``postgresql://…`` URL → that server (through psycopg 3); ``sqlite:///PATH`` or a plain file path →
that SQLite file.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Iterator, Mapping

import sqlalchemy as sa

from farm.errors import InfrastructureError, JobError

DB_ENV = "FARM_DB"
DEFAULT_SQLITE = Path("~/.local/share/farm/results.db")
DISABLED = frozenset({"none", "off"})
MIGRATIONS = Path(__file__).with_name("migrations")


class StoreError(InfrastructureError):
    """The results store cannot be used: the server is not there, the file is locked or unreadable,
    the schema is newer than this farm."""


@contextlib.contextmanager
def store_errors(url: str | None) -> Iterator[None]:
    """Database errors as a :class:`StoreError` of one line naming the store (no traceback, no password)."""
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        reason = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"results store {describe(url) if url else ''}: {redact(reason)}") from None


def database_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The SQLAlchemy URL ``FARM_DB`` names, or None when the store is turned off."""
    environ = os.environ if environ is None else environ
    value = (environ.get(DB_ENV) or "").strip()
    if value.lower() in DISABLED:
        return None
    if not value:
        return f"sqlite:///{DEFAULT_SQLITE.expanduser()}"
    url = None
    for prefix in ("postgresql://", "postgres://"):
        if value.startswith(prefix):
            url = "postgresql+psycopg://" + value[len(prefix):]
    if value.startswith(("postgresql+", "sqlite:")):
        url = value
    if url is None and "://" in value:
        raise JobError(f"{DB_ENV}={redact(value)!r}: expected a postgresql:// URL, a sqlite:/// URL, a file path "
                       "or 'none'")
    if url is None:
        return f"sqlite:///{Path(value).expanduser().absolute()}"
    try:
        sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError) as exc:  # a port that is no number, a malformed URL
        raise JobError(f"{DB_ENV}={redact(value)!r}: not a database URL ({redact(str(exc))})") from None
    return url


#: URL query parameters that carry a password (libpq reads ``?password=`` as the password)
_SECRET_PARAMS = re.compile(r"(?i)([?&](?:[a-z_]*password|sslkey_?password)=)[^&#\s]*")
_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^/\s]*(@)")  # to the last @ of the authority


def redact(text: str) -> str:
    """``text`` with every URL's password hidden: ``user:***@`` and ``?password=***`` (a message, a
    database error, a URL)."""
    return _SECRET_PARAMS.sub(r"\1***", _USERINFO.sub(r"\1***\2", text))


def describe(url: str) -> str:
    """The URL without its password (in the user part or the query), for messages."""
    try:
        shown = sa.make_url(url).render_as_string(hide_password=True)
    except (sa.exc.ArgumentError, ValueError):
        shown = url
    return redact(shown)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")   # ON DELETE CASCADE replaces a run's rows
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (farm serve) do not block a run's ingest
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def engine(url: str) -> sa.Engine:
    """An engine for ``url``; a SQLite file's directory is made."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        eng = sa.create_engine(parsed)
        sa.event.listen(eng, "connect", _sqlite_pragmas)
        return eng
    return sa.create_engine(parsed, pool_pre_ping=True)


def _alembic_config(connection: sa.Connection):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


#: the PostgreSQL advisory lock that serialises migrations ("farm" in ASCII)
_MIGRATION_LOCK = 0x6661726D


@contextlib.contextmanager
def _file_lock(eng: sa.Engine) -> Iterator[None]:
    """For a SQLite file, an exclusive lock on ``<file>.migrate.lock`` while migrating: SQLite takes
    its own write lock only at the first write, after two processes have both read "no schema"."""
    database = eng.url.database if eng.url.get_backend_name() == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    import fcntl

    with open(f"{database}.migrate.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


#: the newest migration's revision (farm/store/migrations/versions): a store already there is opened
#: without importing alembic, which is a third of an ingesting command's start-up (tests/store/test_store.py
#: checks this is alembic's head)
HEAD_REVISION = "0007"


def upgrade(eng: sa.Engine) -> None:
    """Migrate the database to the newest schema (from empty too); nothing happens when it is there.
    Commands that open a new store at once take turns: one migrates, the others find it done. A
    database a newer farm migrated (a revision this farm does not know) is refused, untouched."""
    with eng.connect() as connection:
        if _stored_revision(connection) == HEAD_REVISION:
            return
    from alembic import command
    from alembic.script import ScriptDirectory

    head = head_revision()
    with _file_lock(eng), eng.begin() as connection:
        if connection.dialect.name == "postgresql":  # held until this transaction (the migration) ends
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        current = current_revision(connection)
        if current == head:
            return
        known = {rev.revision for rev in ScriptDirectory.from_config(_alembic_config(connection)).walk_revisions()}
        if current is not None and current not in known:
            raise StoreError(f"results store {describe(str(eng.url))}: its schema is at revision {current}, which "
                             f"this farm does not know (it knows up to {head}): a newer farm migrated it; "
                             "upgrade farm")
        command.upgrade(_alembic_config(connection), "head")


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    cfg = _alembic_config(None)  # type: ignore[arg-type]
    return ScriptDirectory.from_config(cfg).get_current_head()


def _stored_revision(connection: sa.Connection) -> str | None:
    """The revision alembic recorded in the store (its alembic_version table), read without alembic; None
    for a store with no schema yet (or one alembic would find unreadable: then alembic decides)."""
    if not sa.inspect(connection).has_table("alembic_version"):
        return None
    try:
        rows = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    except sa.exc.DBAPIError:
        return None
    return rows[0] if len(rows) == 1 else None


def current_revision(connection: sa.Connection) -> str | None:
    from alembic.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def open_store(environ: Mapping[str, str] | None = None, *, migrate: bool = True) -> sa.Engine | None:
    """The store's engine, migrated to the newest schema; None when ``FARM_DB`` turns it off."""
    url = database_url(environ)
    if url is None:
        return None
    eng = engine(url)
    if migrate:
        upgrade(eng)
    return eng
