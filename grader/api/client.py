"""A small client for the JSON API (standard library only), used by `micrograde submit`."""

from __future__ import annotations

import json
import logging
import mimetypes
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class ApiError(Exception):
    """The server answered with an error (or could not be reached)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({code}, HTTP {status})" if status else message)
        self.status, self.code, self.message = status, code, message


class Client:
    """Talks to one micrograde server with one API token."""

    def __init__(self, server: str, token: str, timeout: float = 30.0) -> None:
        self.base = server.rstrip("/")
        if not self.base.endswith("/api/v1"):
            self.base += "/api/v1"
        self.token, self.timeout = token, timeout

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str | None = None) -> dict[str, Any]:
        """Send one request; return the JSON body or raise ApiError."""
        url = path if path.startswith("http") else self.base + path
        req = urllib.request.Request(url, data=body, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if content_type:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                err = json.loads(raw)["error"]
                raise ApiError(exc.code, err.get("code", "error"), err.get("message", "")) \
                    from None
            except (ValueError, KeyError, TypeError):
                raise ApiError(exc.code, "http_error", raw[:200].decode("utf-8", "replace")
                               or exc.reason) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ApiError(0, "unreachable", f"cannot reach {self.base}: {exc}") from None

    def assignments(self) -> list[dict[str, Any]]:
        """The open assignments."""
        return self.request("GET", "/assignments")["assignments"]

    def submit(self, filename: str, data: bytes, assignment: str) -> dict[str, Any]:
        """Upload a file; return `{id, url, status}`."""
        body, ctype = multipart({"assignment": assignment}, "file", filename, data)
        return self.request("POST", "/submissions", body, ctype)

    def submission(self, submission_id: int | str) -> dict[str, Any]:
        """A submission's status and, once done, its report."""
        return self.request("GET", f"/submissions/{submission_id}")

    def wait(self, submission_id: int | str, timeout: float = 600.0, interval: float = 1.0,
             on_status: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Poll until the submission is graded, invalid or failed (or timeout).

        A server that is briefly unreachable or answers 5xx (restarting, say) is polled
        again until the timeout; the submission is stored and keeps its place meanwhile.
        """
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                sub = self.submission(submission_id)
            except ApiError as exc:
                if 0 < exc.status < 500 or time.monotonic() > deadline:
                    raise
                log.warning("polling submission %s: %s; retrying", submission_id, exc)
                time.sleep(interval)
                continue
            if on_status and sub.get("status") != last:
                on_status(sub)
            last = sub.get("status")
            if last in ("graded", "invalid", "failed"):
                return sub
            if time.monotonic() > deadline:
                raise ApiError(0, "timeout", f"still {last} after {timeout:g} s")
            time.sleep(interval)


def multipart(fields: dict[str, str], file_field: str, filename: str,
              data: bytes) -> tuple[bytes, str]:
    """Encode form fields and one file as multipart/form-data."""
    boundary = "----micrograde" + secrets.token_hex(12)
    ctype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    safe_name = filename.replace('"', "_").replace("\r", "_").replace("\n", "_")
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     f"{value}\r\n".encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
                 f'filename="{safe_name}"\r\nContent-Type: {ctype}\r\n\r\n'.encode()
                 + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def summary(sub: dict[str, Any]) -> str:
    """A finished submission as a few readable lines."""
    report = sub.get("report") or {}
    lines = [f"submission {sub['id']}: {sub['status']}"]
    if sub["status"] == "failed":
        err = sub.get("error") or {}
        lines.append(f"  grading failed: {err.get('message')}")
        return "\n".join(lines)
    if report.get("status") == "invalid":
        err = report.get("error") or {}
        lines.append(f"  NOT GRADED ({err.get('kind')}): {err.get('message')}")
        return "\n".join(lines)
    exercises = report.get("exercises") or []
    width = max((len(e["name"]) for e in exercises), default=8)
    for e in exercises:
        score = "feedback" if e.get("feedback_only") else f"{e['score']:g}/{e['max_score']:g}"
        lines.append(f"  {e['name']:<{width}}  {e['verdict']:<15}  {score:>9}  "
                     f"{e.get('message', '')}")
        lines += [f"  {'':<{width}}  hint: {h}" for h in e.get("hints") or []]
    lines.append(f"  total {report.get('score', 0):g}/{report.get('max_score', 0):g}")
    return "\n".join(lines)
