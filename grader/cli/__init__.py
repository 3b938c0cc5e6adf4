"""The `micrograde` command: one click group, one module per family of subcommands."""

from __future__ import annotations

import logging

import click

from grader.cli.course import COMMANDS as COURSE_COMMANDS
from grader.cli.grade import grade_command
from grader.cli.service import COMMANDS as SERVICE_COMMANDS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log what happens (to stderr).")
def cli(verbose: bool) -> None:
    """micrograde: grade micrograd `Value` implementations, locally or as a service."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


cli.add_command(grade_command)
for _command in (*SERVICE_COMMANDS, *COURSE_COMMANDS):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="micrograde")
