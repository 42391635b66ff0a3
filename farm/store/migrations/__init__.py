"""Alembic migrations of the results store (run by :func:`farm.store.db.upgrade`, never by hand)."""
