#!/usr/bin/env bash
# Set up everything (OS packages, services, .venv) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --services --browser
# used only where PostgreSQL asks for a password on 127.0.0.1 (a stock Debian cluster)
export PGPASSWORD=${PGPASSWORD:-micrograde-tests}
bash scripts/services.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
