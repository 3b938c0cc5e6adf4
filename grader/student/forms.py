"""The submit form: a file upload or pasted code (Flask-WTF, with a CSRF token)."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import SubmitField, TextAreaField


class SubmitForm(FlaskForm):
    """Upload a .py / .ipynb file, or paste the code of value.py."""

    file = FileField("Upload a file", render_kw={"accept": ".py,.ipynb"})
    source = TextAreaField("Paste your code", render_kw={
        "rows": 14, "spellcheck": "false", "autocapitalize": "off", "autocomplete": "off",
        "placeholder": "class Value:\n    def __init__(self, data):\n        ..."})
    submit = SubmitField("Submit for grading")
