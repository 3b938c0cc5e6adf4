"""Blueprint `auth`: sign in, sign out, register with the join code, profile and API token.

Registering it also installs what every HTML page shares (error pages, security headers,
template filters): see `grader.auth.pages`.
"""

from flask import Blueprint

bp = Blueprint("auth", __name__)

from grader.auth import pages, routes  # noqa: E402,F401  (routes attach themselves to bp)

bp.record_once(pages.install)
bp.after_request(pages.secure_headers)
