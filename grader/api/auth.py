"""Bearer tokens for the API and its JSON error shape."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from flask import g, jsonify, request
from flask.typing import ResponseReturnValue

from grader.models import User

log = logging.getLogger(__name__)


def error(code: str, message: str, status: int, **extra: Any) -> ResponseReturnValue:
    """A JSON error response `{"error": {"code", "message"}}`."""
    body = {"code": code, "message": message, **extra}
    response = jsonify({"error": body})
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="micrograde"'
    return response


def bearer_token() -> str | None:
    """The token of an `Authorization: Bearer ...` header, if any."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def token_required(view: Callable[..., ResponseReturnValue]) -> Callable[..., Any]:
    """Run the view with `g.api_user` set, or answer 401 with why not."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> ResponseReturnValue:
        token = bearer_token()
        if token is None:
            return error("missing_token", "send your API token as 'Authorization: Bearer "
                         "<token>' (see your profile page or `micrograde create-user`)", 401)
        user = User.from_token(token)
        if user is None:
            owner = User.token_owner(token)
            if owner is not None and owner.token_expired:
                return error("token_expired", "this API token has expired; create a new one "
                             "on your profile page", 401)
            return error("bad_token", "this API token is not valid (wrong or revoked)", 401)
        g.api_user = user
        return view(*args, **kwargs)

    return wrapped
