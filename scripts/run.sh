#!/usr/bin/env bash
# Set up micrograde and run the whole site on this machine with embedded defaults
# (SQLite, an embedded broker, a real worker process): http://127.0.0.1:5000
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/micrograde serve "$@"
