"""micrograde's grader package: the grading core (`grader.grading`) and the Flask site."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import IntegerConverter, Map

log = logging.getLogger(__name__)

#: one blueprint per audience, each module exposing `bp`; add one line per blueprint
BLUEPRINTS: tuple[str, ...] = (
    "grader.auth",
    "grader.student",
    "grader.instructor",
    "grader.api",
)


class RowId(IntegerConverter):
    """`<int:...>` in routes: a number that fits a database id (larger ones are 404, not 500)."""

    def __init__(self, url_map: Map, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max", 2**31 - 1)
        super().__init__(url_map, *args, **kwargs)


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the site: settings (defaults < MICROGRADE_* env < `config`), extensions, routes."""
    from grader import config as settings

    conf = settings.load(config)
    app = Flask(__name__, instance_path=conf["INSTANCE_PATH"], instance_relative_config=True)
    app.config.update(conf)
    # a form's CSRF token lives as long as the session: a student who pastes code into a
    # submit page opened hours ago is not turned away (Flask-WTF's default is one hour)
    app.config.setdefault("WTF_CSRF_TIME_LIMIT", None)
    proxies = int(app.config.get("TRUSTED_PROXIES") or 0)
    if proxies:  # behind a reverse proxy: the client's address and scheme come from it
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies,  # type: ignore[method-assign]
                                x_host=proxies)
    register_extensions(app)
    app.url_map.converters["int"] = RowId
    register_blueprints(app)
    register_errorhandlers(app)
    return app


def register_extensions(app: Flask) -> None:
    """Bind db, migrations, login, CSRF and Celery to the app."""
    from pathlib import Path

    from grader.extensions import csrf, db, login_manager, migrate
    from worker.celery_app import celery_init_app

    db.init_app(app)
    migrate.init_app(app, db, directory=str(Path(__file__).parent / "migrations"))
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.login_message_category = "info"
    csrf.init_app(app)
    celery_init_app(app)

    @login_manager.user_loader
    def load_user(user_id: str) -> Any:
        from grader.models import User

        user = db.session.get(User, int(user_id)) if user_id.isdigit() else None
        return user if user is not None and user.active else None


def register_blueprints(app: Flask) -> None:
    """Register the blueprint of every module listed in BLUEPRINTS."""
    for module_path in BLUEPRINTS:
        app.register_blueprint(importlib.import_module(module_path).bp)


def wants_json() -> bool:
    """True for API requests (errors there are JSON, never HTML)."""
    return request.path.startswith("/api/")


def register_errorhandlers(app: Flask) -> None:
    """JSON errors under /api/; HTML pages use `app.extensions['html_error']` if set."""

    def handle_http(exc: HTTPException) -> Any:
        if wants_json():
            code = (exc.name or "error").lower().replace(" ", "_")
            message = exc.description
            if exc.code == 413:  # the request is over MAX_CONTENT_LENGTH
                code = "too_large"
                message = (f"the request is over {app.config['MAX_CONTENT_LENGTH'] // 1024} "
                           "KiB; a .py may be 256 KiB and a notebook 8 MiB")
            response = jsonify({"error": {"code": code, "message": message}})
            response.status_code = exc.code or 500
            return response
        renderer = app.extensions.get("html_error")
        return renderer(exc) if renderer else exc

    app.register_error_handler(HTTPException, handle_http)
