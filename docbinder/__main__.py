"""``python -m docbinder`` runs the command line."""

from docbinder.cli import run

run()
