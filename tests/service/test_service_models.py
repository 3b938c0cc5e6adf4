"""Models: tokens, passwords, assignment policy, queue position, the stored report."""

from __future__ import annotations

from datetime import timedelta

from grader.extensions import db
from grader.models import Assignment, Extension, Submission, User, token_digest, utcnow


def test_tokens_are_stored_hashed_and_revocable(app, users) -> None:
    made = users.create()
    with app.app_context():
        user = db.session.get(User, made.id)
        assert made.token.startswith("mg_") and user.token_hash == token_digest(made.token)
        assert made.token not in (user.token_hash, user.token_hint)
        assert User.from_token(made.token).id == made.id
        assert User.from_token(made.token + "x") is None and User.from_token("") is None
        newer = user.issue_token()
        db.session.commit()
        assert User.from_token(made.token) is None and User.from_token(newer).id == made.id
        user.revoke_token()
        db.session.commit()
        assert User.from_token(newer) is None


def test_expired_and_deactivated_tokens_fail(app, users) -> None:
    made = users.create()
    with app.app_context():
        user = db.session.get(User, made.id)
        user.token_expires_at = utcnow() - timedelta(seconds=1)
        db.session.commit()
        assert User.from_token(made.token) is None
        assert User.token_owner(made.token).token_expired
        user.token_expires_at = utcnow() + timedelta(days=1)
        user.active = False
        db.session.commit()
        assert User.from_token(made.token) is None


def test_passwords_are_hashed(app, users) -> None:
    made = users.create(password="s3cret-pw")
    with app.app_context():
        user = db.session.get(User, made.id)
        assert "s3cret-pw" not in user.password_hash
        assert user.check_password("s3cret-pw") and not user.check_password("s3cret-PW")
        assert not User(email="x@y.z").check_password("")


def test_deadline_late_window_and_extension(app, users) -> None:
    alice, bob = users.create(), users.create()
    now = utcnow()
    with app.app_context():
        a = db.session.scalar(db.select(Assignment))
        assert a.is_open(None) and a.closes_at(None) is None  # the default: no deadline
        a.deadline, a.late_until = now - timedelta(hours=1), now + timedelta(hours=1)
        db.session.add(Extension(assignment=a, user_id=bob.id,
                                 deadline=now + timedelta(days=2)))
        db.session.commit()
        u_alice, u_bob = db.session.get(User, alice.id), db.session.get(User, bob.id)
        assert a.is_open(u_alice, now) and a.is_late(u_alice, now)
        assert not a.is_open(u_alice, now + timedelta(hours=2))
        assert not a.is_late(u_bob, now) and a.is_open(u_bob, now + timedelta(days=2))
        # the late window keeps its length after an extended deadline
        assert a.closes_at(u_bob) == now + timedelta(days=2, hours=2)
        a.opens_at = now + timedelta(minutes=5)
        assert not a.is_open(u_bob, now)


def test_queue_position_puts_regrades_behind(app, users) -> None:
    made = users.create()
    with app.app_context():
        a = db.session.scalar(db.select(Assignment))
        rows = [Submission(user_id=made.id, assignment_id=a.id, source="x", sha256="0",
                           seed=1, status=s, regrade=r)
                for s, r in [("graded", False), ("queued", True), ("queued", False),
                             ("running", False), ("queued", False)]]
        db.session.add_all(rows)
        db.session.commit()
        assert [r.queue_position() for r in rows] == [None, 3, 1, None, 2]
