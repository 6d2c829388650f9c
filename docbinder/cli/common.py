"""What every command shares: the guard that turns errors into one line, and the ``--json`` option."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from docbinder.cli.output import fail
from docbinder.cli.state import STATE
from docbinder.domain.errors import AccessDenied, DocbinderError, FileItemNotFound

if TYPE_CHECKING:
    from docbinder.application import Run

F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
"""A command's own ``--json`` (the global one works as well)."""


def handles_errors(func: F) -> F:
    """Turn docbinder and OS errors into one ``error:`` line and exit code 1.

    A :class:`UnicodeEncodeError` (an argument holding bytes that are not
    UTF-8, which Python decodes to lone surrogates, PEP 383) is one line too,
    with exit code 2 (a usage error).

    A closed stdout (``docbinder ... | head``) ends the command quietly with
    exit code 0; Ctrl-C gives ``error: interrupted`` and exit code 130.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = func(*args, **kwargs)
            STATE.flush_audit()  # the read events a command made are in the log when it ends
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return result
        except typer.Exit:
            raise
        except BrokenPipeError:
            _silence_stdout()
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            fail("interrupted")
            raise typer.Exit(130) from None
        except (DocbinderError, OSError) as exc:
            fail(error_line(exc))
            raise typer.Exit(1) from None
        except UnicodeEncodeError as exc:
            # An argument with bytes that are not UTF-8 (PEP 383 surrogates) that a check
            # upstream did not name: still one line, never a traceback.
            fail(
                f"an argument holds bytes that are not valid UTF-8 ({exc.object[exc.start : exc.end]!a}"
                " could not be encoded); give it as UTF-8 text"
            )
            raise typer.Exit(2) from None
        finally:
            # Closing the connections lets SQLite fold its write-ahead log into the
            # database file, so a plain copy of docbinder.db holds what was stored.
            STATE.close_binder()

    return wrapper  # type: ignore[return-value]


def nothing_stored_yet() -> bool:
    """Whether the embedded database does not exist yet (:meth:`State.nothing_stored`).

    Says so on stderr, naming the file and the settings that chose it, since a
    mistyped ``--home`` or ``DOCBINDER_HOME`` looks the same as an empty store.
    """
    missing = STATE.nothing_stored()
    if missing is None:
        return False
    from docbinder.cli.output import err

    err.print(
        f"note: no database at {missing} yet (--home, DOCBINDER_HOME or DOCBINDER_DATABASE_URL "
        "choose it); nothing is stored with these settings",
        markup=False,
        highlight=False,
    )
    return True


def error_line(exc: DocbinderError | OSError) -> str:
    """The ``error:`` line's text for ``exc``; a missing file points at ``files ls``."""
    if isinstance(exc, FileItemNotFound):
        return f"{exc} (docbinder files ls lists the files you may read, with their ids)"
    if isinstance(exc, DocbinderError):
        return str(exc)
    return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)


def _silence_stdout() -> None:
    """The reader went away: send whatever is still written to stdout nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def refuse_attach(run: Run, workflow: str) -> None:
    """Raise :class:`AccessDenied` before anything is stored unless ``run`` may add documents to ``workflow``.

    Asks :meth:`AttachFile.prepare <docbinder.application.use_cases.attach_file.AttachFile.prepare>`,
    which records the refusal (``access_refused``) with the audit log on.
    """
    try:
        run.binder.attach_file.prepare(run.context, label="")
    except AccessDenied:
        raise AccessDenied(
            f"user {run.principal.user_id} may not add documents to workflow {workflow}"
        ) from None
