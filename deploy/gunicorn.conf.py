"""Gunicorn settings for the micrograde web role (`gunicorn -c deploy/gunicorn.conf.py`).

Each setting can be changed through the environment, so docker-compose.yml, a course
server's systemd unit and the test suite run the same command line.
"""

import os

#: where to listen; the container publishes 8000, tests pass a loopback port
bind = os.environ.get("MICROGRADE_BIND", "0.0.0.0:8000")
#: worker processes and threads each; the site only reads and writes rows (grading runs in
#: the Celery workers), so a few processes serve a large course
workers = int(os.environ.get("MICROGRADE_WEB_WORKERS", "3"))
threads = int(os.environ.get("MICROGRADE_WEB_THREADS", "4"))
timeout = int(os.environ.get("MICROGRADE_WEB_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
#: heartbeat files on a tmpfs: an overlay filesystem can stall them under load
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
#: logs go to stdout/stderr, where `docker compose logs` and journald pick them up
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("MICROGRADE_LOG_LEVEL", "info").lower()
#: peers allowed to set X-Forwarded-Proto (the TLS reverse proxy); see docs/deploying.md
forwarded_allow_ips = os.environ.get("MICROGRADE_FORWARDED_ALLOW_IPS", "127.0.0.1")
proxy_allow_ips = forwarded_allow_ips
