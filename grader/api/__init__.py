"""The JSON API (SPEC §8): blueprint `api` under /api/v1, bearer-token auth, CSRF exempt."""

from flask import Blueprint

bp = Blueprint("api", __name__, url_prefix="/api/v1")

from grader.api import routes  # noqa: E402,F401  (routes attach themselves to bp)
