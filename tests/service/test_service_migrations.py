"""Alembic: one head, and the migrations build exactly the models (SQLite and PostgreSQL)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask_migrate import downgrade, upgrade
from sqlalchemy import inspect

import grader
from grader.extensions import db
from tests.service.fixtures import build_app

MIGRATIONS = Path(grader.__file__).parent / "migrations"


def all_model_modules() -> None:
    """Import every `grader.models*` module, so the metadata has every table."""
    for info in pkgutil.iter_modules(grader.__path__):
        if info.name.startswith("models"):
            importlib.import_module(f"grader.{info.name}")


def test_single_head() -> None:
    script = ScriptDirectory(str(MIGRATIONS))
    assert len(script.get_heads()) == 1, script.get_heads()


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_migrations_match_models(engine, tmp_path, request) -> None:
    overrides = {}
    if engine == "postgresql":
        overrides["DATABASE_URL"] = request.getfixturevalue("pg_databases").create()
    app = build_app(tmp_path, schema=False, **overrides)
    all_model_modules()
    with app.app_context():
        upgrade()
        with db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={
                "compare_type": True}), db.metadata)
        assert diff == [], diff
        downgrade(revision="base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        upgrade()
        db.session.remove()
        db.engine.dispose()
