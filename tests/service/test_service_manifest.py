"""The assignments manifest and its loading into the database."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from exercises import manifest
from exercises.manifest import ManifestError


def test_default_manifest_is_the_micrograd_assignment() -> None:
    (spec,) = manifest.load()
    assert spec.slug == "micrograd"
    assert spec.exercises == ("expression", "diamond", "neuron", "mlp_step", "operators")
    assert spec.feedback_only == ("operators",) and spec.points["operators"] == 0
    assert spec.max_score == 10.0


@pytest.mark.parametrize(("text", "needle"), [
    ("nonsense = [", "not valid TOML"),
    ('x = 1', "no [[assignment]]"),
    ('[[assignment]]\nslug = "Bad Slug"\nexercises = ["expression"]', "slug"),
    ('[[assignment]]\nslug = "a"\nexercises = ["nope"]', "unknown exercise"),
    ('[[assignment]]\nslug = "a"\nexercises = ["expression"]\ncolour = 1', "unknown key"),
    ('[[assignment]]\nslug = "a"\nexercises = ["expression"]\n'
     'deadline = 2027-01-01T10:00:00', "time zone"),
    ('[[assignment]]\nslug = "a"\nexercises = ["expression"]\n'
     'late_until = 2027-01-01T10:00:00Z', "late_until needs a deadline"),
    ('[[assignment]]\nslug = "a"\nexercises = ["expression"]\nlate_penalty = 2', "fraction"),
    ('[[assignment]]\nslug = "a"\nexercises = ["expression"]\n'
     '[[assignment]]\nslug = "a"\nexercises = ["diamond"]', "duplicate"),
])
def test_bad_manifests_say_what_is_wrong(text: str, needle: str) -> None:
    with pytest.raises(ManifestError, match=None) as info:
        manifest.parse(text)
    assert needle in str(info.value)


def test_policy_fields_and_sync(app, tmp_path) -> None:
    from grader.extensions import db
    from grader.models import Assignment
    from grader.submissions import sync_manifest

    specs = manifest.parse("""
[[assignment]]
slug = "hw2"
title = "Homework 2"
exercises = ["expression", "neuron"]
hidden = ["neuron"]
deadline = 2027-03-01T23:59:00+01:00
late_until = 2027-03-03
late_penalty = 0.25
max_submissions = 10
cooldown = 60
[assignment.points]
expression = 4
""")
    with app.app_context():
        sync_manifest(specs)
        rows = {a.slug: a for a in db.session.scalars(select(Assignment))}
        hw2 = rows["hw2"]
        assert hw2.points == {"expression": 4.0, "neuron": 2.0} and hw2.max_score == 6.0
        assert hw2.deadline.isoformat() == "2027-03-01T22:59:00+00:00"
        assert hw2.late_until.isoformat() == "2027-03-03T23:59:59+00:00"
        assert (hw2.hidden, hw2.late_penalty, hw2.max_submissions, hw2.cooldown_s) == \
            (["neuron"], 0.25, 10, 60)
        # the default assignment is no longer listed: kept (with its submissions), inactive
        assert rows["micrograd"].active is False and hw2.active is True
