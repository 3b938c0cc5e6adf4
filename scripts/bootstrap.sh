#!/usr/bin/env bash
# Install what micrograde needs on a fresh Debian/Ubuntu machine, then the Python package
# into .venv. Idempotent: a second run only checks. Usage: scripts/bootstrap.sh [--services] [--browser]
set -euo pipefail
cd "$(dirname "$0")/.."

want_services=0; want_browser=0
for arg in "$@"; do
  case "$arg" in
    --services) want_services=1 ;;
    --browser) want_browser=1 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=()
command -v dot >/dev/null || pkgs+=(graphviz)
command -v bwrap >/dev/null || pkgs+=(bubblewrap)
if [ "$want_services" = 1 ]; then
  command -v redis-server >/dev/null || pkgs+=(redis-server)
  command -v pg_ctlcluster >/dev/null || pkgs+=(postgresql)
fi
if [ "$want_browser" = 1 ]; then
  command -v chromium >/dev/null || pkgs+=(chromium)
  fc-list 2>/dev/null | grep -qi dejavu || pkgs+=(fonts-dejavu-core)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    echo "installing OS packages: ${pkgs[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  else
    echo "please install: ${pkgs[*]} (no apt-get here)" >&2
  fi
fi

# A real interpreter, not a shim: the sandbox runs it by absolute path.
PY=${PYTHON:-python3}
PY=$("$PY" -c 'import os, sys; print(os.path.realpath(sys.executable))')
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "micrograde needs Python 3.11+")'
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.micrograde-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  touch "$stamp"
fi
