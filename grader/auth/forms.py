"""Forms of the auth pages (Flask-WTF: every one carries a CSRF token)."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, PasswordField, StringField, SubmitField
from wtforms.validators import DataRequired, Email, EqualTo, Length

MIN_PASSWORD = 8


def normalise_email(value: str | None) -> str:
    """Emails compare case-insensitively: stored trimmed and lower-case."""
    return (value or "").strip().lower()


class LoginForm(FlaskForm):
    """Sign in with email and password."""

    email = EmailField("Email", filters=[normalise_email],
                       validators=[DataRequired("Enter your email address."),
                                   Length(max=254)],
                       render_kw={"autocomplete": "username", "autofocus": True})
    password = PasswordField("Password", validators=[DataRequired("Enter your password.")],
                             render_kw={"autocomplete": "current-password"})
    submit = SubmitField("Sign in")


class RegisterForm(FlaskForm):
    """A student account, allowed by the course join code."""

    name = StringField("Name", filters=[lambda s: (s or "").strip()],
                       validators=[DataRequired("Tell us your name."), Length(max=120)],
                       render_kw={"autocomplete": "name", "autofocus": True})
    email = EmailField("Email", filters=[normalise_email],
                       validators=[DataRequired("Enter your email address."),
                                   Email("That does not look like an email address."),
                                   Length(max=254)],
                       render_kw={"autocomplete": "email"})
    password = PasswordField("Password", validators=[
        DataRequired("Choose a password."),
        Length(min=MIN_PASSWORD, max=200,
               message=f"Use at least {MIN_PASSWORD} characters.")],
        render_kw={"autocomplete": "new-password"})
    confirm = PasswordField("Repeat password", validators=[
        DataRequired("Repeat the password."),
        EqualTo("password", "The two passwords differ.")],
        render_kw={"autocomplete": "new-password"})
    join_code = StringField("Course join code", filters=[lambda s: (s or "").strip()],
                            validators=[DataRequired("Enter the join code from your "
                                                     "instructor."), Length(max=100)],
                            render_kw={"autocomplete": "off", "spellcheck": "false"})
    submit = SubmitField("Create account")


class PasswordChangeForm(FlaskForm):
    """Change one's own password."""

    current = PasswordField("Current password",
                            validators=[DataRequired("Enter your current password.")],
                            render_kw={"autocomplete": "current-password"})
    password = PasswordField("New password", validators=[
        DataRequired("Choose a new password."),
        Length(min=MIN_PASSWORD, max=200,
               message=f"Use at least {MIN_PASSWORD} characters.")],
        render_kw={"autocomplete": "new-password"})
    confirm = PasswordField("Repeat new password", validators=[
        DataRequired("Repeat the new password."),
        EqualTo("password", "The two passwords differ.")],
        render_kw={"autocomplete": "new-password"})
    submit = SubmitField("Change password")


class ActionForm(FlaskForm):
    """A button that changes something (sign out, new token, revoke): only the CSRF token."""

    submit = SubmitField("Go")
