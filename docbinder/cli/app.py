"""The ``docbinder`` command groups and the global options (SPEC C15).

The command modules (:mod:`docbinder.cli.main` imports them all) register on
:data:`app` and its groups. A usage error (bad option value, unknown command)
is one ``error:`` line on stderr with exit code 2.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from docbinder.cli.output import SafeLogHandler, err, fail, out
from docbinder.cli.state import STATE, login_name
from docbinder.cli.version import version_line

# typer bundles its own click; its exception base is reached through a public class.
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class _OneLineErrors(TyperGroup):
    """The top-level command: a usage error (bad option value, unknown command) is one
    ``error:`` line on stderr with exit code 2, like every other bad input."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except _ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # type: ignore[attr-defined]  # the help text, asked for by no arguments
            else:
                fail(exc.format_message() + self._global_option_hint(exc))  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        except typer.Abort:
            fail("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def _global_option_hint(self, exc: Exception) -> str:
        """For a global option given after a command (``mcp --home DIR``): where it goes."""
        name = getattr(exc, "option_name", None)
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ != "NoSuchOption" or not name or ctx is None:
            return ""
        param = next((p for p in self.params if name in p.opts), None)
        if param is None:
            return ""
        takes_value = not (getattr(param, "is_flag", False) or getattr(param, "count", False))
        commands: list[str] = []
        while ctx.parent is not None:
            commands.insert(0, ctx.info_name)
            ctx = ctx.parent
        given = f"{name} VALUE" if takes_value else name
        return (
            f"; {name} is a global option: give it before the command "
            f"(docbinder {given} {' '.join(commands)} ...)"
        )


app = typer.Typer(
    cls=_OneLineErrors,
    name="docbinder",
    help="Store files produced by agent tools, attach them to a workflow, and resolve the references a model sends back.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # the commands' docstrings: ``--json`` shows as code
)
workflow_app = typer.Typer(
    help="Create and inspect workflows.", no_args_is_help=True, rich_markup_mode="markdown"
)
files_app = typer.Typer(
    help="List, inspect and read stored files.", no_args_is_help=True, rich_markup_mode="markdown"
)
store_app = typer.Typer(
    help="Check and accept the blob store's location.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(workflow_app, name="workflow")
app.add_typer(files_app, name="files")
quota_app = typer.Typer(
    help="Limit what a mandate or feature instance may store.", no_args_is_help=True
)
app.add_typer(store_app, name="store")
audit_app = typer.Typer(help="Read and check the audit log.", no_args_is_help=True)
app.add_typer(quota_app, name="quota")
retention_app = typer.Typer(
    help="Decide how long files are kept; place legal holds.", no_args_is_help=True
)
app.add_typer(audit_app, name="audit")
app.add_typer(retention_app, name="retention")


def _print_version(value: bool) -> None:
    if value:
        out.print(version_line())
        raise typer.Exit(0)


@app.callback()
def main(
    home: Annotated[
        Path | None,
        typer.Option(help="Data directory of the embedded default (env DOCBINDER_HOME)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="TOML configuration file (env DOCBINDER_CONFIG).")
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            help="Metadata URL: sqlite:///..., postgresql+psycopg://..., mysql+pymysql://..., memory://"
        ),
    ] = None,
    blob_url: Annotated[
        str | None, typer.Option(help="Blob URL: file:///dir, s3://bucket/prefix, memory://")
    ] = None,
    authorizer: Annotated[str | None, typer.Option(help="roletable (default) or casbin.")] = None,
    user: Annotated[
        str | None, typer.Option(envvar="DOCBINDER_USER", help="User id (default: the login name).")
    ] = None,
    mandate: Annotated[
        str, typer.Option(envvar="DOCBINDER_MANDATE", help="Mandate (tenant) id.")
    ] = "default",
    feature_instance: Annotated[
        str | None, typer.Option(envvar="DOCBINDER_FEATURE_INSTANCE", help="Feature instance id.")
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option(
            envvar="DOCBINDER_ROLE",
            help="Role (repeatable): viewer, member, admin (default: member).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document on stdout.")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option("--verbose", "-v", count=True, help="Show log lines (-v info, -vv debug)."),
    ] = 0,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Global options: configuration, identity, output."""
    STATE.reset()
    STATE.overrides = {
        "home": str(home) if home else None,
        "database_url": database_url,
        "blob_url": blob_url,
        "authorizer": authorizer,
    }
    STATE.config_file = config
    STATE.user = user or login_name()
    STATE.mandate = mandate
    STATE.feature_instance = feature_instance
    STATE.roles = tuple(role) if role else ("member",)
    STATE.json = json_output
    _configure_logging(verbose)


def _configure_logging(verbose: int) -> None:
    """Log lines of the ``docbinder`` logger on stderr: errors only, ``-v`` info, ``-vv`` debug."""
    level = logging.ERROR if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger("docbinder")
    root.handlers[:] = [SafeLogHandler(console=err, show_path=False, show_time=False)]
    root.setLevel(level)
    root.propagate = False
