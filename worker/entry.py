"""Celery entry point: `celery -A worker.entry worker` (and `beat`)."""
from grader import create_app

flask_app = create_app()
celery_app = flask_app.extensions["celery"]
