"""WSGI entry point for gunicorn: `gunicorn grader.wsgi:app`."""

from grader import create_app

app = create_app()
