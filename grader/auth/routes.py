"""Sign in, sign out, register with the join code, profile with password and API token."""

from __future__ import annotations

import hmac
import logging
from urllib.parse import urlsplit

from flask import current_app, flash, redirect, render_template, request, session, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required, login_user, logout_user
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from werkzeug.security import check_password_hash, generate_password_hash

from grader.auth import bp
from grader.auth.forms import ActionForm, LoginForm, PasswordChangeForm, RegisterForm
from grader.auth.throttle import Throttle, describe, throttle
from grader.extensions import db
from grader.models import User

log = logging.getLogger(__name__)

_dummy_hash: list[str] = []


def client_address() -> str:
    """The address the request came from (as the WSGI server, or its proxy fix, saw it)."""
    return request.remote_addr or "unknown"


def safe_next(target: str | None) -> str | None:
    """`target` when it is a path on this site, else None (no open redirects)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return None
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else None


def instructor_home() -> str | None:
    """The instructor area's front page, when the site has one."""
    for endpoint in ("instructor.index", "instructor.dashboard"):
        if endpoint in current_app.view_functions:
            return url_for(endpoint)
    return None


def home_for(user: User) -> str:
    """Where a user lands after signing in: the instructor area for staff, if there is one."""
    return (user.is_instructor and instructor_home()) or url_for("student.index")


def _burn_time(password: str) -> None:
    """Check against a dummy hash, so an unknown email takes as long as a wrong password."""
    if not _dummy_hash:
        _dummy_hash.append(generate_password_hash("not a password"))
    check_password_hash(_dummy_hash[0], password)


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    """Sign in; five failures in five minutes per email and address lock it for a while."""
    if current_user.is_authenticated:
        return redirect(safe_next(request.args.get("next")) or home_for(current_user))
    form = LoginForm()
    if not form.validate_on_submit():
        return render_template("auth/login.html", form=form), 400 if form.is_submitted() else 200
    limiter = throttle()
    key = Throttle.key("login", form.email.data, client_address())
    wait = limiter.retry_after(key)
    if wait:
        log.warning("sign-in for %s from %s throttled", form.email.data, client_address())
        form.form_errors.append(f"Too many failed sign-in attempts for this account from "
                                f"your address. Try again in {describe(wait)}.")
        response = render_template("auth/login.html", form=form), 429, {"Retry-After": wait}
        return response
    user = db.session.scalar(select(User).where(User.email == form.email.data))
    if user is None:
        _burn_time(form.password.data)
    if user is None or not user.check_password(form.password.data):
        limiter.fail(key)
        form.form_errors.append("Wrong email or password.")
        return render_template("auth/login.html", form=form), 401
    if not user.is_active:
        form.form_errors.append("This account is deactivated. Ask your instructor.")
        return render_template("auth/login.html", form=form), 403
    limiter.clear(key)
    target = safe_next(request.args.get("next"))
    session.clear()  # nothing from before the sign-in survives it
    login_user(user)
    session.permanent = True
    log.info("user %s signed in", user.id)
    return redirect(target or home_for(user))


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    """Sign out (a POST with a CSRF token, so no other site can sign you out)."""
    form = ActionForm()
    if form.validate_on_submit():
        logout_user()
        session.clear()
        flash("You are signed out.", "info")
    return redirect(url_for("auth.login"))


@bp.route("/register", methods=["GET", "POST"])
def register() -> ResponseReturnValue:
    """Create a student account with the course join code."""
    if current_user.is_authenticated:
        return redirect(home_for(current_user))
    form = RegisterForm()
    if request.method == "GET" and request.args.get("code"):
        form.join_code.data = request.args["code"][:100]  # a link the instructor shared
    if not form.validate_on_submit():
        status = 400 if form.is_submitted() else 200
        return render_template("auth/register.html", form=form), status
    limiter = throttle()
    key = Throttle.key("join", client_address())
    wait = limiter.retry_after(key)
    if wait:
        form.form_errors.append(f"Too many wrong join codes from your address. Try again in "
                                f"{describe(wait)}.")
        return render_template("auth/register.html", form=form), 429, {"Retry-After": wait}
    expected = str(current_app.config.get("JOIN_CODE") or "")
    if not expected or not hmac.compare_digest(form.join_code.data.encode("utf-8"),
                                               expected.encode("utf-8")):
        limiter.fail(key)
        form.join_code.errors.append("That join code is not right. Your instructor has it.")
        return render_template("auth/register.html", form=form), 400
    user = User(email=form.email.data, name=form.name.data, role="student")
    user.set_password(form.password.data)
    db.session.add(user)
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        form.email.errors.append("An account with this email already exists. Sign in "
                                 "instead.")
        return render_template("auth/register.html", form=form), 400
    limiter.clear(key)
    session.clear()
    login_user(user)
    session.permanent = True
    log.info("student %s registered", user.id)
    flash(f"Welcome, {user.name}! Pick an assignment to submit your Value class.", "success")
    return redirect(url_for("student.index"))


def _profile(status: int = 200, *, new_token: str | None = None,
             password_form: PasswordChangeForm | None = None) -> ResponseReturnValue:
    html = render_template("auth/profile.html", user=current_user, new_token=new_token,
                           password_form=password_form or PasswordChangeForm(),
                           action=ActionForm(), server=request.url_root.rstrip("/"))
    # a freshly shown token must not linger in any cache
    return html, status, {"Cache-Control": "no-store"}


@bp.get("/profile")
@login_required
def profile() -> ResponseReturnValue:
    """Account details, password change and the API token."""
    return _profile()


@bp.post("/profile/token")
@login_required
def new_token() -> ResponseReturnValue:
    """Create (or replace) the API token and show it once."""
    if not ActionForm().validate_on_submit():
        return redirect(url_for("auth.profile"))
    ttl = int(current_app.config.get("TOKEN_TTL_DAYS") or 365)
    token = current_user.issue_token(ttl_days=ttl)
    db.session.commit()
    log.info("user %s created a new API token", current_user.id)
    return _profile(new_token=token)


@bp.post("/profile/token/revoke")
@login_required
def revoke_token() -> ResponseReturnValue:
    """Revoke the API token: it stops working at once."""
    if ActionForm().validate_on_submit():
        current_user.revoke_token()
        db.session.commit()
        flash("Your API token is revoked; scripts using it will get 401 now.", "info")
    return redirect(url_for("auth.profile"))


@bp.post("/profile/password")
@login_required
def change_password() -> ResponseReturnValue:
    """Change the password (the current one is required)."""
    form = PasswordChangeForm()
    if not form.validate_on_submit():
        return _profile(400, password_form=form)
    if not current_user.check_password(form.current.data):
        form.current.errors.append("That is not your current password.")
        return _profile(400, password_form=form)
    current_user.set_password(form.password.data)
    db.session.commit()
    flash("Your password is changed.", "success")
    return redirect(url_for("auth.profile"))
