"""Casbin-backed authorizer (SPEC C11).

:class:`CasbinAuthorizer` answers the :class:`~docbinder.ports.authorizer.Authorizer`
port with a `Casbin <https://casbin.org>`_ enforcer (the ``casbin`` package,
pip extra ``[casbin]``). The shipped model (``model.conf``) and policy
(``policy.csv``) beside this module express the same rules as
:class:`~docbinder.adapters.rbac.roletable.RoleTableAuthorizer`:

1. nothing crosses mandates (a matcher condition no policy row can lift);
2. ``admin`` may do everything in its mandate, in every feature instance;
3. a resource of feature instance F is visible only to principals working in F;
   mandate-level resources are visible mandate-wide;
4. ``viewer`` reads; ``member`` reads and creates, and updates or deletes what it
   owns. Unknown roles grant nothing.

Every decision is one ``enforce(sub, obj, act)`` call. ``sub`` is a
:class:`CasbinSubject`, ``obj`` a :class:`CasbinObject`, ``act`` the action's
value (``"read"``, ``"create"``, ``"update"``, ``"delete"``); a custom model
must accept that request. Casbin is imported only when an authorizer is built,
so importing this module never needs the extra.
"""

from __future__ import annotations

import importlib
import importlib.resources
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Final, Protocol

import attrs

from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.errors import (
    ConfigurationError,
    DocbinderError,
    MissingExtra,
    StorageError,
)
from docbinder.domain.model import Principal

__all__ = [
    "POLICY_TOKENS",
    "CasbinAuthorizer",
    "CasbinObject",
    "CasbinSubject",
    "SupportsEnforce",
    "shipped_model_text",
    "shipped_policy_text",
]

_PACKAGE: Final = "docbinder.adapters.rbac"
_MODEL_RESOURCE: Final = "model.conf"
_POLICY_RESOURCE: Final = "policy.csv"

POLICY_TOKENS: Final = ("role", "kind", "act", "ownership", "reach")
"""Fields of a ``p`` row in the shipped model, in order."""

_RULE_TABLE: Final = "casbin_rule"
"""The table ``casbin_sqlalchemy_adapter`` keeps policy rows in."""

_OWNERSHIP: Final = frozenset({"any", "own"})
_REACH: Final = frozenset({"instance", "mandate"})


@attrs.frozen
class CasbinSubject:
    """The ``sub`` of a Casbin request: who asks.

    ``feature_instance`` is ``""`` when the principal works at mandate level;
    ``roles`` is the principal's tuple of role names.
    """

    user: str
    mandate: str
    feature_instance: str
    roles: tuple[str, ...]

    @classmethod
    def of(cls, principal: Principal) -> CasbinSubject:
        """The subject describing ``principal``."""
        return cls(
            user=principal.user_id,
            mandate=principal.mandate_id,
            feature_instance=principal.feature_instance_id or "",
            roles=tuple(principal.roles),
        )


@attrs.frozen
class CasbinObject:
    """The ``obj`` of a Casbin request: what is asked about.

    ``kind`` is a :class:`~docbinder.domain.access.ResourceKind` value
    (``"file"`` or ``"workflow"``); ``feature_instance`` is ``""`` for a
    mandate-level resource; ``owner`` is the owning (or creating) user's id.
    """

    kind: str
    mandate: str
    feature_instance: str
    owner: str

    @classmethod
    def of(cls, resource: Resource) -> CasbinObject:
        """The object describing ``resource``."""
        return cls(
            kind=resource.kind.value,
            mandate=resource.scope.mandate_id,
            feature_instance=resource.scope.feature_instance_id or "",
            owner=resource.owner_id,
        )


class SupportsEnforce(Protocol):
    """What :meth:`CasbinAuthorizer.from_enforcer` needs: a Casbin enforcer.

    ``enforce(sub, obj, act)`` returns ``True`` to allow; ``casbin.Enforcer``,
    ``casbin.SyncedEnforcer`` and ``casbin.FastEnforcer`` all fit.
    """

    def enforce(self, *rvals: Any) -> bool:
        """Decide one request."""


def shipped_model_text() -> str:
    """The text of the shipped ``model.conf`` (read as a package resource)."""
    return _resource_text(_MODEL_RESOURCE)


def shipped_policy_text() -> str:
    """The text of the shipped ``policy.csv`` (read as a package resource)."""
    return _resource_text(_POLICY_RESOURCE)


def _resource_text(name: str) -> str:
    return importlib.resources.files(_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def _import(module: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(feature, "casbin", module) from exc


def _policy_rows(text: str) -> list[tuple[str, list[str]]]:
    """Parse Casbin CSV policy text into ``(ptype, values)`` pairs.

    Blank lines and lines starting with ``#`` are skipped; fields are split on
    commas and stripped (the shipped policy quotes nothing).
    """
    rows: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split(",")]
        rows.append((fields[0], fields[1:]))
    return rows


def _text_adapter(casbin: ModuleType, text: str) -> Any:
    """A read-only Casbin adapter that loads policy rows from ``text``.

    Used for the shipped policy so that it loads from an installed wheel (even a
    zipped one) without a file path.
    """
    load_policy_line = casbin.persist.load_policy_line
    base: Any = casbin.persist.Adapter

    class _TextAdapter(base):  # type: ignore[misc,unused-ignore]
        def load_policy(self, model: Any) -> None:
            for raw in text.splitlines():
                load_policy_line(raw.strip(), model)

    return _TextAdapter()


class CasbinAuthorizer:
    """Casbin-backed :class:`~docbinder.ports.authorizer.Authorizer`.

    Build it one of three ways:

    * ``CasbinAuthorizer(model_path=None, policy_path=None)``: model and policy
      from files; each defaults to the shipped ``model.conf`` / ``policy.csv``.
    * :meth:`from_enforcer`: wrap an enforcer the host built itself.
    * :meth:`from_database`: policy rows stored in SQL (``casbin_rule`` table via
      ``casbin_sqlalchemy_adapter``), seeded from the shipped policy when empty.

    Raises :class:`~docbinder.domain.errors.MissingExtra` when ``casbin`` is not
    installed and :class:`~docbinder.domain.errors.ConfigurationError` when the
    model or policy cannot be loaded, does not accept docbinder's
    ``(sub, obj, act)`` request, or (for the shipped policy definition) holds a
    row with an unknown kind, action, ownership or reach.
    """

    _enforcer: SupportsEnforce
    _engine: Any

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        policy_path: str | os.PathLike[str] | None = None,
    ) -> None:
        casbin = _import("casbin", "Casbin authorizer")
        model = _load_model(casbin, model_path)
        try:
            if policy_path is None:
                adapter = _text_adapter(casbin, shipped_policy_text())
            else:
                path = os.fspath(policy_path)
                if not os.path.isfile(path):
                    raise ConfigurationError(f"Casbin policy file not found: {path!r}")
                adapter = casbin.FileAdapter(path)
            enforcer = casbin.Enforcer(model, adapter)
        except DocbinderError:
            raise
        except Exception as exc:
            raise ConfigurationError(f"cannot load the Casbin policy: {exc}") from exc
        self._setup(enforcer, engine=None)

    @classmethod
    def from_enforcer(cls, enforcer: SupportsEnforce) -> CasbinAuthorizer:
        """Wrap an existing Casbin enforcer.

        Its model must accept ``enforce(CasbinSubject, CasbinObject, action)``;
        this is probed once here (:class:`ConfigurationError` if not).
        """
        self = cls.__new__(cls)
        self._setup(enforcer, engine=None)
        return self

    @classmethod
    def from_database(
        cls, url: str, model_path: str | os.PathLike[str] | None = None
    ) -> CasbinAuthorizer:
        """An authorizer whose policy rows live in a SQL database.

        ``url`` is a SQLAlchemy URL (``sqlite:///policies.db``,
        ``postgresql+psycopg://...``). The ``casbin_rule`` table is created if
        missing. When the table holds no rows and the model uses the shipped
        policy definition (:data:`POLICY_TOKENS`), it is seeded with the shipped
        policy; existing rows are never changed, and a custom model's table is
        never seeded (it starts empty: everything denied). ``model_path``
        defaults to the shipped model. Call :meth:`close` to release the engine.

        Raises :class:`MissingExtra` without ``casbin`` /
        ``casbin_sqlalchemy_adapter``, :class:`ConfigurationError` for a
        malformed URL, model or policy row, :class:`StorageError` when the
        database fails.
        """
        casbin = _import("casbin", "Casbin authorizer")
        sql_adapter = _import("casbin_sqlalchemy_adapter", "Casbin authorizer with SQL policies")
        import sqlalchemy  # a core dependency; imported here so the module stays light

        model = _load_model(casbin, model_path)
        try:
            engine = sqlalchemy.create_engine(url)
        except Exception as exc:
            raise ConfigurationError(f"invalid policy database URL: {exc}") from exc
        try:
            enforcer = casbin.Enforcer(model, sql_adapter.Adapter(engine))
            if _has_shipped_definition(enforcer) and _table_is_empty(engine):
                enforcer.add_policies(
                    [
                        values
                        for ptype, values in _policy_rows(shipped_policy_text())
                        if ptype == "p"
                    ]
                )
        except sqlalchemy.exc.SQLAlchemyError as exc:
            engine.dispose()
            raise StorageError(f"cannot load Casbin policies from the database: {exc}") from exc
        except Exception as exc:
            engine.dispose()
            raise ConfigurationError(f"cannot load the Casbin policy: {exc}") from exc
        self = cls.__new__(cls)
        try:
            self._setup(enforcer, engine=engine)
        except DocbinderError:
            engine.dispose()
            raise
        return self

    def _setup(self, enforcer: SupportsEnforce, engine: Any) -> None:
        self._enforcer = enforcer
        self._engine = engine
        _check_policy_rows(enforcer)
        _probe(enforcer)

    @property
    def name(self) -> str:
        """``"casbin"``."""
        return "casbin"

    @property
    def enforcer(self) -> SupportsEnforce:
        """The wrapped Casbin enforcer (for policy management by the host)."""
        return self._enforcer

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        """``True`` if the policy allows ``principal`` to ``action`` the ``resource``.

        An ordinary "no" is ``False``. A model or policy that Casbin cannot
        evaluate raises :class:`ConfigurationError` (never a silent allow).
        """
        try:
            decision = self._enforcer.enforce(
                CasbinSubject.of(principal), CasbinObject.of(resource), action.value
            )
        except Exception as exc:
            raise ConfigurationError(f"the Casbin model cannot decide this request: {exc}") from exc
        return decision is True

    def reload_policy(self) -> None:
        """Re-read the policy from its file or database (e.g. after another process edited it).

        Raises :class:`ConfigurationError` when the reloaded policy is malformed,
        :class:`StorageError` when the database fails.
        """
        load = getattr(self._enforcer, "load_policy", None)
        if load is None:
            raise ConfigurationError("this Casbin enforcer cannot reload its policy")
        try:
            load()
        except Exception as exc:
            if type(exc).__module__.startswith("sqlalchemy"):
                raise StorageError(f"cannot reload Casbin policies: {exc}") from exc
            raise ConfigurationError(f"cannot reload the Casbin policy: {exc}") from exc
        _check_policy_rows(self._enforcer)

    def close(self) -> None:
        """Release the database engine made by :meth:`from_database` (no-op otherwise)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __repr__(self) -> str:
        return f"CasbinAuthorizer(enforcer={type(self._enforcer).__name__})"


def _load_model(casbin: ModuleType, model_path: str | os.PathLike[str] | None) -> Any:
    try:
        model = casbin.Model()
        if model_path is None:
            model.load_model_from_text(shipped_model_text())
        else:
            path = os.fspath(model_path)
            if not os.path.isfile(path):
                raise ConfigurationError(f"Casbin model file not found: {path!r}")
            model.load_model(path)
    except DocbinderError:
        raise
    except Exception as exc:
        raise ConfigurationError(f"cannot load the Casbin model: {exc}") from exc
    return model


def _policy_definition(enforcer: SupportsEnforce) -> Sequence[str] | None:
    try:
        tokens = enforcer.model["p"]["p"].tokens  # type: ignore[attr-defined]
    except (AttributeError, KeyError, TypeError):
        return None
    return tuple(str(token) for token in tokens)


def _has_shipped_definition(enforcer: SupportsEnforce) -> bool:
    return _policy_definition(enforcer) == tuple(f"p_{token}" for token in POLICY_TOKENS)


def _table_is_empty(engine: Any) -> bool:
    import sqlalchemy

    with engine.connect() as connection:
        count = connection.execute(sqlalchemy.text(f"SELECT COUNT(*) FROM {_RULE_TABLE}")).scalar()
    return not count


def _check_policy_rows(enforcer: SupportsEnforce) -> None:
    """Reject rows the shipped policy definition cannot mean (typos fail loudly).

    Applies only when the model's ``p`` definition is the shipped one
    (:data:`POLICY_TOKENS`); other models are the host's business.
    """
    if not _has_shipped_definition(enforcer):
        return
    kinds = {kind.value for kind in ResourceKind}
    actions = {action.value for action in Action}
    for row in enforcer.get_policy():  # type: ignore[attr-defined]
        problem = None
        if len(row) != len(POLICY_TOKENS):
            problem = f"expected {len(POLICY_TOKENS)} fields"
        else:
            _role, kind, act, ownership, reach = row
            if kind not in kinds:
                problem = f"unknown kind {kind!r}"
            elif act not in actions:
                problem = f"unknown action {act!r}"
            elif ownership not in _OWNERSHIP:
                problem = f"ownership must be 'any' or 'own', not {ownership!r}"
            elif reach not in _REACH:
                problem = f"reach must be 'instance' or 'mandate', not {reach!r}"
        if problem is not None:
            raise ConfigurationError(f"invalid Casbin policy row p, {', '.join(row)}: {problem}")


def _probe(enforcer: SupportsEnforce) -> None:
    """Run one request so a model that cannot take docbinder's request fails at start-up."""
    subject = CasbinSubject("probe-user", "probe-mandate", "", ("admin", "member", "viewer"))
    obj = CasbinObject(ResourceKind.FILE.value, "probe-mandate", "", "probe-user")
    try:
        enforcer.enforce(subject, obj, Action.READ.value)
    except Exception as exc:
        raise ConfigurationError(
            "the Casbin model does not accept docbinder's request "
            f"(sub, obj, act with attributes as in CasbinSubject/CasbinObject): {exc}"
        ) from exc
