"""What one ``docbinder`` invocation knows: the global options, the identity, the binder.

The top-level callback (:mod:`docbinder.cli.app`) fills :data:`STATE` from the
global options; every command reads it. The settings are loaded and the binder
is built on first use, so a command that needs neither (``--help``, a usage
error) loads and builds nothing.
"""

from __future__ import annotations

import contextlib
import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docbinder.domain.model import Principal, Scope

if TYPE_CHECKING:
    from docbinder.application import DocBinder, Run
    from docbinder.config import Settings

DEFAULT_USER = "local-user"
"""The user id when the login name cannot be read or is blank."""


class State:
    """Options of the top-level callback, and the settings and binder built from them on first use.

    ``overrides`` maps setting names to values given as options (``None``: not
    given); ``roles`` are role names; ``json`` is the global ``--json``.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every option and the binder: the state of a fresh process."""
        self.overrides: dict[str, Any] = {}
        self.config_file: Path | None = None
        self.user = DEFAULT_USER
        self.mandate = "default"
        self.feature_instance: str | None = None
        self.roles: tuple[str, ...] = ("member",)
        self.json = False
        self._settings: Settings | None = None
        self._binder: DocBinder | None = None

    @property
    def settings(self) -> Settings:
        """The settings: options > environment > config file > defaults (:meth:`Settings.load`).

        Raises :class:`~docbinder.domain.errors.ConfigurationError` naming a bad setting.
        """
        if self._settings is None:
            from docbinder.config import Settings

            self._settings = Settings.load(self.overrides, config_file=self.config_file)
        return self._settings

    def scope(self, mandate: str | None, feature_instance: str | None = None) -> Scope:
        """The scope an operator command's ``--mandate`` / ``--feature-instance`` name.

        ``mandate`` ``None`` (the option not given) is the global ``--mandate``;
        an empty or malformed id, given or global, raises
        :class:`~docbinder.domain.errors.InvalidInput` (never the default mandate).
        """
        return Scope(self.mandate if mandate is None else mandate, feature_instance)

    @property
    def principal(self) -> Principal:
        """The CLI identity (self-asserted: the CLI is an operator tool)."""
        return Principal(self.user, self.mandate, self.feature_instance, roles=self.roles)

    def binder(self, *, prepare: bool = True) -> DocBinder:
        """The binder; with ``prepare`` the embedded SQLite default is migrated on first use."""
        if self._binder is None:
            from docbinder.container import build_binder

            self._binder = build_binder(self.settings, prepare=prepare)
            self._warn_of_unknown_roles(self._binder)
        return self._binder

    def nothing_stored(self) -> Path | None:
        """The embedded database file when it does not exist yet, else ``None``.

        Nothing can have been stored with these settings then, so a command that
        only lists answers "none" without building a binder, which would create
        and migrate the database (ADR 0063): a mistyped ``--home`` leaves no
        empty database behind. ``None`` once the binder is built, and for every
        other metadata store.
        """
        if self._binder is not None:
            return None
        path = self.settings.sqlite_file
        return path if path is not None and not path.exists() else None

    def close_binder(self) -> None:
        """Close the binder if one was built (its pools, threads, clients); the next use builds anew.

        Errors while closing are not the command's: they are dropped.
        """
        binder, self._binder = self._binder, None
        if binder is not None and not binder.closed:
            with contextlib.suppress(Exception):
                binder.close()

    def flush_audit(self) -> None:
        """Append the audit events the binder still holds (reads are collected in batches)."""
        if self._binder is not None and not self._binder.closed:
            self._binder.audit_log.flush()

    def start_run(self, workflow: str | None) -> Run:
        """A run of the CLI identity, bound to ``workflow`` (``None``: no workflow).

        A ``workflow`` named while the embedded database does not exist yet is
        :class:`~docbinder.domain.errors.WorkflowNotFound` naming the file looked for,
        and nothing is created (a mistyped ``--home``, ADR 0063).
        """
        missing = self.nothing_stored() if workflow is not None else None
        if missing is not None:
            from docbinder.domain.errors import WorkflowNotFound

            raise WorkflowNotFound(
                f"workflow {workflow} not found: no database at {missing} yet "
                "(--home, DOCBINDER_HOME or DOCBINDER_DATABASE_URL choose it)"
            )
        return self.binder().start_run(self.principal, workflow)

    def wants_json(self, flag: bool) -> bool:
        """Whether to print JSON: the command's own ``--json`` or the global one."""
        return flag or self.json

    def _warn_of_unknown_roles(self, binder: DocBinder) -> None:
        """A ``--role`` the role table does not know grants nothing: say so once, on stderr."""
        # Only the role table says which roles exist (``known_roles``); with another
        # authorizer (Casbin) the policy gives roles their meaning.
        known = getattr(binder.access.authorizer, "known_roles", None)
        if not isinstance(known, frozenset):
            return
        from docbinder.cli.output import err

        for role in self.roles:
            if role not in known:
                err.print(
                    f"warning: role {role!r} is not one of {', '.join(sorted(known))}; "
                    "it grants nothing",
                    markup=False,
                )


def login_name() -> str:
    """The login name without whitespace, else :data:`DEFAULT_USER`."""
    try:
        name = getpass.getuser()
    except Exception:
        return DEFAULT_USER
    return "".join(ch for ch in name if not ch.isspace()) or DEFAULT_USER


STATE = State()
"""The state of this process's invocation."""
