"""What every HTML page shares: error pages, security headers, template filters and globals."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from flask import Flask, Response, current_app, render_template, request
from flask.blueprints import BlueprintSetupState
from flask_login import current_user
from flask_wtf.csrf import CSRFError
from markupsafe import escape
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from grader.auth import throttle
from grader.models import utcnow

log = logging.getLogger(__name__)

#: pages load only this site's own scripts, styles and images; nothing may frame them
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
TITLES = {400: "Bad request", 401: "Sign in needed", 403: "Not allowed", 404: "Not found",
          405: "Method not allowed", 413: "Upload too large", 429: "Too many requests",
          500: "Something went wrong", 503: "Service unavailable"}


def secure_headers(response: Response) -> Response:
    """Add the pages' security headers (unless a view set its own policy)."""
    for name, value in PAGE_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def error_message(exc: HTTPException) -> str:
    """What to tell a person about this error."""
    if isinstance(exc, CSRFError):
        return ("This form expired or did not come from this site (its security token is "
                "missing or wrong). Go back, reload the page and try again.")
    if isinstance(exc, RequestEntityTooLarge):
        limits = current_app.config.get("LIMITS")
        if limits is not None:
            return (f"That upload is too large. A .py file may be at most "
                    f"{limits.upload_bytes // 1024} KiB and a notebook "
                    f"{limits.notebook_bytes // (1024 * 1024)} MiB.")
        return "That upload is too large."
    if exc.code == 404:
        return "There is nothing here, or it is not yours to see."
    if exc.code == 500:
        return "The server hit an error. It has been logged; please try again in a moment."
    return exc.description or TITLES.get(exc.code or 500, "Error")


def render_error(exc: HTTPException) -> Response:
    """The HTML page for an HTTP error (the API answers JSON instead)."""
    code = exc.code or 500
    if code >= 500:
        log.error("%s %s -> %s", request.method, request.path, code)
    title, message = TITLES.get(code, exc.name), error_message(exc)
    try:
        html = render_template("errors/error.html", code=code, title=title, message=message)
    except Exception:  # e.g. the database is down: a plain page rather than none
        log.exception("error page %s could not be rendered", code)
        html = (f"<!doctype html><title>{code} {escape(title)}</title><h1>{escape(title)}"
                f"</h1><p>{escape(message)}</p>")
    response = Response(html, status=code, mimetype="text/html")
    if isinstance(exc, HTTPException) and code in (405, 429):
        for name, value in exc.get_headers():
            if name.lower() in ("allow", "retry-after"):
                response.headers[name] = value
    return secure_headers(response)


def fmt_num(x: Any) -> str:
    """A number as a student reads it (6 significant digits); '—' for none."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if x != x:
        return "nan"
    return f"{x:.6g}"


def fmt_score(x: Any) -> str:
    """A score: 7, 6.5, 0.9 (no trailing zeros)."""
    if x is None:
        return "—"
    return f"{float(x):.2f}".rstrip("0").rstrip(".")


def fmt_when(dt: datetime | None) -> str:
    """A UTC time as '2027-03-01 23:59 UTC'."""
    return dt.strftime("%Y-%m-%d %H:%M UTC") if dt else "—"


def fmt_ago(dt: datetime | None, now: datetime | None = None) -> str:
    """'3 min ago', 'in 2 days' relative to now."""
    if dt is None:
        return ""
    delta = ((now or utcnow()) - dt).total_seconds()
    future, s = delta < 0, abs(delta)
    for size, unit in ((86400, "day"), (3600, "h"), (60, "min")):
        if s >= size:
            n = int(s // size)
            text = f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''}"
            break
    else:
        return "just now" if not future else "in a moment"
    return f"in {text}" if future else f"{text} ago"


def install(state: BlueprintSetupState) -> None:
    """Set up the shared page machinery on the app (once, with the auth blueprint)."""
    app: Flask = state.app
    app.extensions["html_error"] = render_error
    throttle.init_app(app)
    app.jinja_env.filters.update(num=fmt_num, score=fmt_score, when=fmt_when, ago=fmt_ago)

    @app.context_processor
    def page_globals() -> dict[str, Any]:
        from grader.auth.forms import ActionForm
        from grader.auth.routes import instructor_home

        staff = current_user.is_authenticated and current_user.is_instructor
        # never bound to the request's form data (an error page may render for a request
        # whose body cannot be read, e.g. one over the size limit)
        return {"logout_form": lambda: ActionForm(formdata=None),
                "instructor_home": instructor_home() if staff else None, "now": utcnow}
