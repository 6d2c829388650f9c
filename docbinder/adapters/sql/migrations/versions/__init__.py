"""Alembic revisions of the SQL metadata store, oldest first."""
