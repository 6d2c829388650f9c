"""Alembic migration scripts of the SQL metadata store (run them with :func:`docbinder.adapters.sql.migrate`)."""
