#!/usr/bin/env bash
# The whole test suite: lint, types, layering, then pytest. Run from the repository root
# with the development extras installed (pip install -e '.[dev]').
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
echo "== ruff"
"$PY" -m ruff check docbinder tests bench scripts
"$PY" -m ruff format --check docbinder tests bench scripts
echo "== mypy"
"$PY" -m mypy docbinder
echo "== import-linter"
lint-imports
echo "== pytest"
"$PY" -m pytest "$@"
