#!/usr/bin/env bash
# The whole test suite: lint, types, layering, the docs site, then pytest. Run from the repository root
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
echo "== mkdocs"
# The docs site: a broken link, a missing page or an API reference that does not render fails.
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
echo "== pytest"
# Two workers (pytest-xdist): the suite stays within its 15 minutes on a 2-core machine;
# tests/conftest.py gathers the workers' reliability figures into the closing report.
"$PY" -m pytest -n "${DOCBINDER_TEST_WORKERS:-2}" "$@"
