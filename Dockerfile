# syntax=docker/dockerfile:1
# One image for every micrograde role; docker-compose.yml gives each role its command:
#   web      gunicorn -c deploy/gunicorn.conf.py grader.wsgi:app   (user micrograde)
#   worker   celery -A worker.entry worker --queues=grading,regrade   (user grader, bwrap)
#   beat     celery -A worker.entry beat                              (the sweeper's clock)
#   migrate  micrograde migrate                                       (one-shot, before web)
# No secret is baked in: settings arrive as MICROGRADE_* environment variables at run time.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
WORKDIR /src
# The exact dependency versions the test suite ran against, from the pins alone: this
# layer is rebuilt only when they change, not on every edit of the code.
COPY deploy/constraints.txt deploy/
RUN /opt/venv/bin/pip install --no-cache-dir -r deploy/constraints.txt
COPY . .
# The package itself; `pip check` fails the build if the pins above miss a dependency.
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps . \
    && /opt/venv/bin/pip check \
    && /opt/venv/bin/python -c "import grader, worker, exercises, reference"

FROM ${PYTHON_IMAGE}
# graphviz renders the diffs; bubblewrap jails student code. Both come from the Debian
# release the base image is built on, which only ever receives security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap graphviz \
    && rm -rf /var/lib/apt/lists/* \
    && dot -V && bwrap --version

# Two unprivileged accounts with ids no host account is likely to use: the process limit of
# a sandboxed run counts every process of its uid, so graders do not share one with the web.
RUN groupadd --system --gid 10001 micrograde \
    && useradd --system --uid 10001 --gid micrograde --home-dir /app --shell /usr/sbin/nologin micrograde \
    && groupadd --system --gid 10002 grader \
    && useradd --system --uid 10002 --gid grader --home-dir /app --shell /usr/sbin/nologin grader \
    && install -d -o micrograde -g grader -m 0770 /var/lib/micrograde

COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY deploy/gunicorn.conf.py deploy/healthcheck.py deploy/

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    MICROGRADE_INSTANCE_PATH=/var/lib/micrograde

USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "-c", "deploy/gunicorn.conf.py", "grader.wsgi:app"]
