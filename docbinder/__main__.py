"""``python -m docbinder`` runs the command line."""

from docbinder.adapters.cli.main import app

app(prog_name="docbinder")
