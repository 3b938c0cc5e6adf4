"""Fixtures for the deployment tests: the compose file as Docker Compose v2 resolves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deploy_helpers import compose, env_file_values, make_env


@pytest.fixture(scope="session")
def project_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compose project directory with a freshly generated .env."""
    return make_env(tmp_path_factory.mktemp("compose-project"))


@pytest.fixture(scope="session")
def compose_config(project_dir: Path) -> dict:
    """docker-compose.yml fully resolved by Compose v2 (interpolated, merged), as JSON."""
    return json.loads(compose(project_dir, "config", "--format", "json").stdout)


@pytest.fixture(scope="session")
def dotenv(project_dir: Path) -> dict[str, str]:
    """The values of the generated .env."""
    return env_file_values(project_dir / ".env")
