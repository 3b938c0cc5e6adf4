"""The assignments manifest (assignments.toml): which exercises, points and policy.

Standard library only; `grader` loads the parsed specs into the database.
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from exercises import EXERCISES

log = logging.getLogger(__name__)

DEFAULT_PATH = Path(__file__).resolve().parent / "assignments.toml"
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
KEYS = {"slug", "title", "description", "exercises", "points", "feedback_only", "hidden",
        "opens_at", "deadline", "late_until", "late_penalty", "max_submissions", "cooldown"}


class ManifestError(ValueError):
    """The manifest is malformed; the message says where."""


@dataclass(frozen=True)
class AssignmentSpec:
    """One assignment as the manifest declares it."""

    slug: str
    title: str
    exercises: tuple[str, ...]
    points: dict[str, float]
    description: str = ""
    feedback_only: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    opens_at: datetime | None = None
    deadline: datetime | None = None
    late_until: datetime | None = None
    late_penalty: float = 0.0
    max_submissions: int | None = None
    cooldown: int = 0

    @property
    def max_score(self) -> float:
        """Points available."""
        return sum(p for n, p in self.points.items() if n not in self.feedback_only)


def _when(value: Any, where: str) -> datetime | None:
    """A TOML date/datetime as an aware UTC datetime (a bare date means the day's end)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ManifestError(f"{where}: give a time zone, e.g. 2027-03-01T23:59:00Z")
        return value.astimezone(UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(23, 59, 59), tzinfo=UTC)
    raise ManifestError(f"{where}: expected a TOML date or datetime, got {value!r}")


def parse_assignment(raw: dict[str, Any], where: str) -> AssignmentSpec:
    """Validate one [[assignment]] table."""
    unknown = set(raw) - KEYS
    if unknown:
        raise ManifestError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    slug = raw.get("slug", "")
    if not isinstance(slug, str) or not SLUG.match(slug):
        raise ManifestError(f"{where}: slug must be lowercase letters, digits, - or _")
    names = tuple(raw.get("exercises") or ())
    if not names:
        raise ManifestError(f"{where} ({slug}): list at least one exercise")
    bad = [n for n in names if n not in EXERCISES]
    if bad:
        raise ManifestError(f"{where} ({slug}): unknown exercise(s) {', '.join(bad)}; "
                            f"known: {', '.join(EXERCISES)}")
    feedback = tuple(raw.get("feedback_only") or ())
    hidden = tuple(raw.get("hidden") or ())
    for key, subset in (("feedback_only", feedback), ("hidden", hidden)):
        if not set(subset) <= set(names):
            raise ManifestError(f"{where} ({slug}): {key} names exercises not in the list")
    given = raw.get("points") or {}
    points = {n: float(given.get(n, 0.0 if n in feedback else EXERCISES[n].points))
              for n in names}
    if any(p < 0 for p in points.values()):
        raise ManifestError(f"{where} ({slug}): points cannot be negative")
    for n in feedback:
        points[n] = 0.0
    opens, deadline = _when(raw.get("opens_at"), f"{where}.opens_at"), \
        _when(raw.get("deadline"), f"{where}.deadline")
    late_until = _when(raw.get("late_until"), f"{where}.late_until")
    if late_until and (deadline is None or late_until < deadline):
        raise ManifestError(f"{where} ({slug}): late_until needs a deadline before it")
    penalty = float(raw.get("late_penalty", 0.0))
    if not 0.0 <= penalty <= 1.0:
        raise ManifestError(f"{where} ({slug}): late_penalty is a fraction in [0, 1]")
    max_subs = int(raw.get("max_submissions", 0) or 0)
    cooldown = int(raw.get("cooldown", 0) or 0)
    if max_subs < 0 or cooldown < 0:
        raise ManifestError(f"{where} ({slug}): max_submissions and cooldown are >= 0")
    return AssignmentSpec(
        slug=slug, title=str(raw.get("title") or slug), exercises=names, points=points,
        description=str(raw.get("description") or "").strip(), feedback_only=feedback,
        hidden=hidden, opens_at=opens, deadline=deadline, late_until=late_until,
        late_penalty=penalty, max_submissions=max_subs or None, cooldown=cooldown)


def parse(text: str) -> list[AssignmentSpec]:
    """Parse manifest text into assignment specs (slugs unique)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"not valid TOML: {exc}") from exc
    tables = data.get("assignment")
    if not isinstance(tables, list) or not tables:
        raise ManifestError("the manifest declares no [[assignment]]")
    specs = [parse_assignment(t, f"assignment[{i}]") for i, t in enumerate(tables)]
    slugs = [s.slug for s in specs]
    dupes = sorted({s for s in slugs if slugs.count(s) > 1})
    if dupes:
        raise ManifestError(f"duplicate slug(s): {', '.join(dupes)}")
    return specs


def load(path: str | Path | None = None) -> list[AssignmentSpec]:
    """Read and validate a manifest file (the shipped one by default)."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"cannot read manifest {path}: {exc}") from exc
    return parse(text)
