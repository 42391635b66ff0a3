"""Alembic's environment: farm hands it an open connection (``config.attributes["connection"]``)."""

from alembic import context

from farm.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")  # SQLite alters tables by copying
with context.begin_transaction():
    context.run_migrations()
