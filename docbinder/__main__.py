"""``python -m docbinder`` runs the command line."""

from docbinder.cli.main import app

app(prog_name="docbinder")
