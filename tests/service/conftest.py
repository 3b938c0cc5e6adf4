"""The service fixtures (tests/service/fixtures.py) for this folder."""

from tests.service.fixtures import *  # noqa: F403
