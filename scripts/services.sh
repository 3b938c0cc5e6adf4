#!/usr/bin/env bash
# Start Redis and PostgreSQL on loopback when they are not running, and create the test
# database. Used by the test suite and CI; safe to run again.
set -euo pipefail
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  ver=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start
  for _ in $(seq 100); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.1; done
fi
# The tests connect as postgres over TCP. A stock Debian cluster asks for a password there:
# give postgres the one in PGPASSWORD (scripts/test.sh sets it), through the local socket.
if ! psql -h 127.0.0.1 -U postgres -qtA -c "select 1" postgres >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && [ -n "${PGPASSWORD:-}" ]; then
    su postgres -c "psql -qc \"ALTER USER postgres PASSWORD '$PGPASSWORD'\"" >/dev/null
  fi
fi
exists=$(psql -h 127.0.0.1 -U postgres -qtA -c "select 1 from pg_database where datname='micrograde_test'" postgres 2>/dev/null || true)
if [ "$exists" != "1" ]; then
  psql -h 127.0.0.1 -U postgres -q -c "create database micrograde_test" postgres
fi
echo "services: redis $(redis-cli -h 127.0.0.1 ping), postgres $(pg_isready -h 127.0.0.1 -p 5432 | cut -d- -f2)"
