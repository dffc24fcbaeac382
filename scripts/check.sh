#!/usr/bin/env bash
# All checks in one command: lint, format, strict typing, tests.
#   bash scripts/check.sh            (in an environment with `pip install -e '.[dev]'`)
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check src tests benchmarks examples
ruff format --check src
mypy
python -m pytest -q "$@"
