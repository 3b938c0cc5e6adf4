"""Sign in, sign out, registration with the join code, profile, API token, throttling, CSRF."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import func, select

from tests.web.webtools import (
    JOIN_CODE,
    PASSWORD,
    create_user,
    csrf_token,
    login,
    unique_email,
)


def count_users(app: Flask, email: str) -> int:
    from grader.extensions import db
    from grader.models import User

    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(User)
                                 .where(User.email == email))


def register(client: Any, **fields: str) -> Any:
    page = client.get("/register")
    data = {"name": "Ada", "email": unique_email(), "password": PASSWORD,
            "confirm": PASSWORD, "join_code": JOIN_CODE,
            "csrf_token": csrf_token(page.get_data(as_text=True)), **fields}
    return client.post("/register", data=data)


def test_pages_need_sign_in(client: Any) -> None:
    for path in ("/", "/history", "/profile", "/assignments/micrograd", "/submissions/1"):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response.headers["Location"].startswith("/login?next="), path


def test_sign_in_sets_a_protected_session_cookie(app: Flask, student: Any) -> None:
    client = app.test_client()
    response = login(client, student.email)
    assert response.status_code == 302 and response.headers["Location"] == "/"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # plain http unless configured
    page = client.get("/").get_data(as_text=True)
    assert "Ada Student" in page and "Sign out" in page


def test_secure_cookie_when_configured(make_app: Any) -> None:
    app = make_app(SESSION_COOKIE_SECURE=True)
    user = create_user(app)
    response = login(app.test_client(), user.email)
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_wrong_password_and_unknown_email_get_the_same_answer(app: Flask,
                                                               student: Any) -> None:
    client = app.test_client()
    wrong = login(client, student.email, "not my password")
    unknown = login(client, unique_email(), PASSWORD)
    for response in (wrong, unknown):
        assert response.status_code == 401
        assert "Wrong email or password." in response.get_data(as_text=True)
    assert client.get("/").status_code == 302


def test_sign_in_is_case_insensitive_on_email(app: Flask) -> None:
    user = create_user(app, email=unique_email("case"))
    response = login(app.test_client(), "  " + user.email.upper() + " ")
    assert response.status_code == 302


def test_sign_in_is_throttled_per_email_and_address(app: Flask) -> None:
    user = create_user(app)
    client = app.test_client()
    for _ in range(5):
        assert login(client, user.email, "guess").status_code == 401
    blocked = login(client, user.email)  # even the right password now waits
    body = blocked.get_data(as_text=True)
    assert blocked.status_code == 429
    assert "Too many failed sign-in attempts" in body and "Try again in" in body
    assert 0 < int(blocked.headers["Retry-After"]) <= 300
    assert client.get("/").status_code == 302  # not signed in
    # the same account from another address is not locked out
    other = app.test_client()
    other.environ_base["REMOTE_ADDR"] = "10.1.2.3"
    assert login(other, user.email).status_code == 302


def test_a_successful_sign_in_clears_the_failures(app: Flask) -> None:
    user = create_user(app)
    client = app.test_client()
    for _ in range(4):
        login(client, user.email, "guess")
    assert login(client, user.email).status_code == 302
    client.post("/logout", data={"csrf_token": csrf_token(client.get("/").get_data(
        as_text=True))})
    for _ in range(4):
        assert login(client, user.email, "guess").status_code == 401
    assert login(client, user.email).status_code == 302


def test_deactivated_account_cannot_sign_in(app: Flask) -> None:
    from grader.extensions import db
    from grader.models import User

    user = create_user(app)
    with app.app_context():
        db.session.get(User, user.id).active = False
        db.session.commit()
    response = login(app.test_client(), user.email)
    assert response.status_code == 403
    assert "deactivated" in response.get_data(as_text=True)


def test_no_open_redirect_after_sign_in(app: Flask, student: Any) -> None:
    for target, expected in (("/history", "/history"), ("//evil.example/x", "/"),
                             ("https://evil.example/", "/"), ("/\\evil.example", "/")):
        client = app.test_client()
        page = client.get(f"/login?next={target}")
        response = client.post(f"/login?next={target}", data={
            "email": student.email, "password": PASSWORD,
            "csrf_token": csrf_token(page.get_data(as_text=True))})
        assert response.headers["Location"] == expected, target


def test_instructor_lands_in_the_instructor_area(app: Flask) -> None:
    staff = create_user(app, role="instructor", name="Prof")
    client = app.test_client()
    response = login(client, staff.email)
    expected = "/instructor/" if "instructor.index" in app.view_functions else "/"
    assert response.headers["Location"] == expected
    if expected != "/":
        assert 'href="/instructor/"' in client.get("/").get_data(as_text=True)


def test_sign_out_needs_a_post_with_a_csrf_token(app: Flask, signed_in: Any) -> None:
    client, _ = signed_in
    assert client.get("/logout").status_code == 405
    forged = client.post("/logout", data={"csrf_token": "forged"})
    assert forged.status_code == 400
    assert client.get("/").status_code == 200  # still signed in
    token = csrf_token(client.get("/").get_data(as_text=True))
    response = client.post("/logout", data={"csrf_token": token})
    assert response.status_code == 302 and response.headers["Location"] == "/login"
    assert client.get("/").status_code == 302


def test_register_with_the_join_code(app: Flask) -> None:
    client = app.test_client()
    email = unique_email("new")
    response = register(client, email=email.upper(), name="  Grace Hopper ")
    assert response.status_code == 302 and response.headers["Location"] == "/"
    page = client.get("/").get_data(as_text=True)
    assert "Welcome, Grace Hopper!" in page
    from grader.extensions import db
    from grader.models import User

    with app.app_context():
        user = db.session.scalar(select(User).where(User.email == email))
        assert user.role == "student" and user.name == "Grace Hopper"
        assert user.password_hash and PASSWORD not in user.password_hash
        assert user.check_password(PASSWORD)


def test_register_refuses_bad_input_and_stores_nothing(app: Flask) -> None:
    client = app.test_client()
    cases = [
        ({"join_code": "wrong"}, "That join code is not right"),
        ({"confirm": "something else"}, "The two passwords differ."),
        ({"password": "short", "confirm": "short"}, "Use at least 8 characters."),
        ({"email": "not-an-email"}, "does not look like an email"),
        ({"name": ""}, "Tell us your name."),
        ({"join_code": ""}, "Enter the join code"),
    ]
    for fields, message in cases:
        email = fields.get("email") or unique_email("bad")
        response = register(client, **{"email": email, **fields})
        assert response.status_code == 400, fields
        assert message in response.get_data(as_text=True), fields
        assert count_users(app, email) == 0, fields


def test_register_twice_with_one_email(app: Flask) -> None:
    email = unique_email("twice")
    assert register(app.test_client(), email=email).status_code == 302
    response = register(app.test_client(), email=email)
    assert response.status_code == 400
    assert "already exists" in response.get_data(as_text=True)
    assert count_users(app, email) == 1


def test_join_code_guessing_is_throttled(app: Flask) -> None:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = "10.9.9.9"
    for _ in range(5):
        assert register(client, join_code="guess").status_code == 400
    email = unique_email("late")
    response = register(client, email=email)  # even the right code waits now
    assert response.status_code == 429
    assert "Too many wrong join codes" in response.get_data(as_text=True)
    assert count_users(app, email) == 0


def test_forms_refuse_a_missing_or_forged_csrf_token(app: Flask, student: Any) -> None:
    client = app.test_client()
    for token in (None, "forged-token", csrf_token(app.test_client().get("/login")
                                                   .get_data(as_text=True))):
        data = {"email": student.email, "password": PASSWORD}
        if token is not None:
            data["csrf_token"] = token
        client.get("/login")
        response = client.post("/login", data=data)
        assert response.status_code == 400, token
        assert "security token" in response.get_data(as_text=True)
    assert client.get("/").status_code == 302  # never signed in
    email = unique_email("nocsrf")
    response = client.post("/register", data={
        "name": "X", "email": email, "password": PASSWORD, "confirm": PASSWORD,
        "join_code": JOIN_CODE})
    assert response.status_code == 400 and count_users(app, email) == 0


def test_profile_token_create_use_regenerate_revoke(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    page = client.get("/profile")
    assert "You have no API token." in page.get_data(as_text=True)
    created = client.post("/profile/token", data={
        "csrf_token": csrf_token(page.get_data(as_text=True))})
    html = created.get_data(as_text=True)
    assert created.status_code == 200 and created.headers["Cache-Control"] == "no-store"
    token = html.split('id="new-token" class="mono" aria-label="API token"')[0] \
        .rsplit('value="', 1)[1].split('"')[0]
    assert token.startswith("mg_") and "shown only once" in html
    api = app.test_client()
    bearer = {"Authorization": f"Bearer {token}"}
    assert api.get("/api/v1/assignments", headers=bearer).status_code == 200
    again = client.get("/profile").get_data(as_text=True)
    assert token not in again and f"mg_…{token[-4:]}" in again  # shown once, then a hint

    regenerated = client.post("/profile/token", data={"csrf_token": csrf_token(again)})
    assert regenerated.status_code == 200
    assert api.get("/api/v1/assignments", headers=bearer).status_code == 401

    page = client.get("/profile").get_data(as_text=True)
    revoked = client.post("/profile/token/revoke", data={"csrf_token": csrf_token(page)})
    assert revoked.status_code == 302
    assert "revoked" in client.get("/profile").get_data(as_text=True)
    from grader.extensions import db
    from grader.models import User

    with app.app_context():
        assert db.session.get(User, user.id).token_hash is None


def test_token_cannot_be_created_by_another_site(signed_in: Any) -> None:
    client, _ = signed_in
    assert client.post("/profile/token").status_code == 400
    assert client.post("/profile/token/revoke", data={"csrf_token": "x"}).status_code == 400


def test_change_password(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    token = csrf_token(client.get("/profile").get_data(as_text=True))
    wrong = client.post("/profile/password", data={
        "csrf_token": token, "current": "nope", "password": "new password 1",
        "confirm": "new password 1"})
    assert wrong.status_code == 400
    assert "not your current password" in wrong.get_data(as_text=True)
    ok = client.post("/profile/password", data={
        "csrf_token": token, "current": PASSWORD, "password": "new password 1",
        "confirm": "new password 1"})
    assert ok.status_code == 302
    assert login(app.test_client(), user.email, PASSWORD).status_code == 401
    assert login(app.test_client(), user.email, "new password 1").status_code == 302


def test_html_errors_are_pages_and_api_errors_stay_json(signed_in: Any) -> None:
    client, _ = signed_in
    page = client.get("/no/such/page")
    assert page.status_code == 404 and page.mimetype == "text/html"
    body = page.get_data(as_text=True)
    assert "Not found" in body and "Back to your assignments" in body
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    api = client.get("/api/v1/submissions/999999")
    assert api.status_code == 401 and api.is_json


def test_a_shared_link_fills_in_the_join_code(client: Any) -> None:
    page = client.get("/register?code=%3Cb%3Ecode").get_data(as_text=True)
    assert 'value="&lt;b&gt;code"' in page


def test_behind_a_trusted_proxy_throttling_counts_the_forwarded_client(make_app: Any) -> None:
    app = make_app(TRUSTED_PROXIES=1)
    user = create_user(app)
    proxy = {"REMOTE_ADDR": "127.0.0.1"}
    attacker = app.test_client()
    attacker.environ_base.update(proxy, HTTP_X_FORWARDED_FOR="203.0.113.7")
    for _ in range(5):
        assert login(attacker, user.email, "guess").status_code == 401
    assert login(attacker, user.email).status_code == 429
    # another client behind the same proxy is not locked out with the attacker
    student = app.test_client()
    student.environ_base.update(proxy, HTTP_X_FORWARDED_FOR="198.51.100.2")
    assert login(student, user.email).status_code == 302


def test_a_form_opened_hours_ago_still_submits(app: Flask, student: Any,
                                               monkeypatch: Any) -> None:
    """CSRF tokens last as long as the session, not Flask-WTF's default hour."""
    import time

    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    later = time.time() + 5 * 3600
    monkeypatch.setattr(time, "time", lambda: later)  # the student comes back after lunch
    response = client.post("/login", data={"email": student.email, "password": PASSWORD,
                                           "csrf_token": token})
    assert response.status_code == 302
