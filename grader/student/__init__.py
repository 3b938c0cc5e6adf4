"""Blueprint `student`: assignment list, submit (upload or paste), live submission page, history."""

import re

from flask import Blueprint
from markupsafe import Markup, escape

from grader.auth.pages import secure_headers

bp = Blueprint("student", __name__)

from grader.student import present, routes, submission  # noqa: E402,F401  (routes attach to bp)

bp.after_request(secure_headers)


@bp.app_template_filter("status_label")
def status_label(status: str) -> str:
    """A submission status in words."""
    return present.STATUSES.get(status, status)


@bp.app_template_filter("verdict_label")
def verdict_label(verdict: str) -> str:
    """A verdict in words."""
    return present.VERDICTS.get(verdict, verdict)


@bp.app_template_filter("inline_code")
def inline_code(text: str | None) -> Markup:
    """Escape `text`, then show `backticked` spans as code (feedback and hints use them)."""
    return Markup(re.sub(r"`([^`\n]+)`", r"<code>\1</code>", str(escape(text or ""))))


bp.add_app_template_global(present.table_keys, "table_keys")
