"""Forms of the instructor pages (Flask-WTF: every one carries a CSRF token)."""

from __future__ import annotations

from collections.abc import Iterable

from flask_wtf import FlaskForm
from wtforms import DateTimeLocalField, SelectField, StringField, SubmitField
from wtforms.validators import DataRequired, Length

from grader.models import User


class ExtensionForm(FlaskForm):
    """Grant (or change) one student's extended deadline, in UTC."""

    user_id = SelectField("Student", coerce=int,
                          validators=[DataRequired("Choose a student.")])
    deadline = DateTimeLocalField("New deadline (UTC)", format="%Y-%m-%dT%H:%M",
                                  validators=[DataRequired("Give the new deadline.")])
    reason = StringField("Reason", filters=[lambda s: (s or "").strip()],
                         validators=[Length(max=500)])
    submit = SubmitField("Save extension")

    def set_students(self, users: Iterable[User]) -> None:
        """Offer these users as choices."""
        self.user_id.choices = [(u.id, f"{u.name} <{u.email}>" if u.name else u.email)
                                for u in users]
