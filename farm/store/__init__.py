"""The results store: every run directory's records, stages, boots, images and console in a database.

SQLite by default (``~/.local/share/farm/results.db``, nothing to start), PostgreSQL for a lab-wide
server (``FARM_DB=postgresql://user@host/db``); ``FARM_DB=none`` turns it off. One schema for both
(:mod:`farm.store.schema`, SQLAlchemy Core), created and upgraded by Alembic migrations
(:mod:`farm.store.migrations`). Run directories stay the truth: the store is an index of them that
``farm db ingest`` can always rebuild.
"""
