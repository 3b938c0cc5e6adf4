"""docs/deploying.md stays true to the files it describes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from deploy_helpers import ROOT, compose, make_env

DOC = ROOT / "docs" / "deploying.md"


def code_blocks(lang: str) -> list[str]:
    """The fenced code blocks of the guide in one language."""
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


def test_every_setting_of_env_example_is_explained() -> None:
    text = DOC.read_text()
    names = re.findall(r"(?m)^(?:# )?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text())
    missing = [n for n in names if n not in text]
    assert not missing, f"docs/deploying.md does not mention {missing}"


def test_every_service_is_described(compose_config: dict) -> None:
    text = DOC.read_text()
    for name in compose_config["services"]:
        assert f"| `{name}` |" in text, name


def test_links_and_paths_exist() -> None:
    text = DOC.read_text()
    for target in re.findall(r"\]\((\.\./[^)#]+)\)", text):
        assert (DOC.parent / target).exists(), target
    for path in set(re.findall(r"(?<![\w/.])(deploy/[\w.-]+)", text)):
        assert (ROOT / path).exists(), path


def test_commands_match_the_compose_file(compose_config: dict) -> None:
    """The 'Without Docker' commands are the compose commands, word for word."""
    block = next(b for b in code_blocks("bash") if "gunicorn -c" in b)
    lines = [line.split("#")[0].split() for line in block.splitlines()]
    for name in ("migrate", "web", "worker"):
        argv = compose_config["services"][name]["command"]
        assert any(words[-len(argv):] == argv for words in lines), name
    beat = compose_config["services"]["beat"]["command"]
    assert any(words[:4] == beat[:4] for words in lines)


def test_the_manifest_override_example_is_valid(tmp_path: Path) -> None:
    block = next(b for b in code_blocks("yaml") if "MICROGRADE_MANIFEST" in b)
    project = make_env(tmp_path)
    (project / "docker-compose.override.yml").write_text(block)
    config = json.loads(compose(project, "config", "--format", "json",
                                files=("docker-compose.yml", "docker-compose.override.yml"))
                        .stdout)
    for name in ("migrate", "web", "worker", "beat"):
        svc = config["services"][name]
        assert svc["environment"]["MICROGRADE_MANIFEST"] == "/etc/micrograde/assignments.toml"
        assert svc["environment"]["MICROGRADE_SECRET_KEY"], "the override adds, never replaces"
        mounts = {(v["source"], v["target"], v.get("read_only")) for v in svc["volumes"]}
        assert (str(project / "assignments.toml"), "/etc/micrograde/assignments.toml",
                True) in mounts, name


def test_caddy_and_nginx_examples_forward_to_the_published_port(compose_config: dict) -> None:
    port = compose_config["services"]["web"]["ports"][0]
    upstream = f"{port['host_ip']}:{port['published']}"
    assert any(f"reverse_proxy {upstream}" in b for b in code_blocks("caddy"))
    assert any(f"proxy_pass http://{upstream};" in b for b in code_blocks("nginx"))
    text = (ROOT / ".env.example").read_text()
    assert "MICROGRADE_FORWARDED_ALLOW_IPS=*" in text  # so X-Forwarded-Proto is believed
