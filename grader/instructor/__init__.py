"""Blueprint `instructor` (/instructor): dashboards, student table, submissions, regrades, exports.

One guard covers every route: anonymous visitors are sent to sign in, students get 403.
"""

from __future__ import annotations

from flask import Blueprint, abort
from flask.typing import ResponseReturnValue
from flask_login import current_user

from grader.auth.pages import secure_headers
from grader.extensions import login_manager

bp = Blueprint("instructor", __name__, url_prefix="/instructor")


@bp.before_request
def instructors_only() -> ResponseReturnValue | None:
    """Redirect anonymous users to the sign-in page; refuse everyone but instructors."""
    if not current_user.is_authenticated:
        return login_manager.unauthorized()
    if not current_user.is_instructor:
        abort(403)
    return None


bp.after_request(secure_headers)  # the site's page headers (CSP: no inline scripts)

from grader import models_course  # noqa: E402,F401  (the regrade_batch table)
from grader.instructor import actions, routes  # noqa: E402,F401  (routes attach to bp)
