"""Alembic environment of the SQL metadata store.

Run through :mod:`docbinder.adapters.sql.migration`, which hands over an open
connection in ``config.attributes["connection"]``; no ``alembic.ini`` and no
URL from the environment are read. To write a new revision during
development::

    from alembic import command
    from docbinder.adapters.sql.migration import alembic_config
    from docbinder.adapters.sql import create_engine_from_url

    engine = create_engine_from_url("sqlite:///dev.db")  # migrated to head
    with engine.begin() as conn:
        command.revision(alembic_config(conn), message="...", autogenerate=True)
"""

from __future__ import annotations

from alembic import context

from docbinder.adapters.sql.migration import VERSION_TABLE, include_name
from docbinder.adapters.sql.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None or context.is_offline_mode():
    raise RuntimeError(
        "docbinder migrations run online through docbinder.adapters.sql.migrate(), "
        "which passes a connection"
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    include_name=include_name,
    compare_type=True,
    render_as_batch=connection.dialect.name == "sqlite",
)

with context.begin_transaction():
    context.run_migrations()
