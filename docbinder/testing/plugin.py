"""pytest fixtures for hosts' own tests: a binder, a run, principals (``docbinder_*``).

Loaded automatically wherever docbinder is installed, through the entry point
``docbinder.testing.plugin`` in group ``pytest11`` (disable with
``-p no:docbinder.testing.plugin``). The entry point's name is the module's
name, so listing ``pytest_plugins = ["docbinder.testing.plugin"]`` in a
``conftest.py`` as well registers it once, never twice.

Fixtures (each function-scoped, so every test starts empty; the binders are
closed when their test ends, releasing connections and worker threads):

* ``docbinder_binder`` -- a :class:`~docbinder.application.DocBinder` over
  ``memory://`` metadata and blobs with the role-table authorizer, built by
  :func:`docbinder.container.build_binder` as a host's own binder is;
* ``docbinder_sqlite_binder`` -- the embedded default: SQLite and local-disk blobs
  under a fresh temporary home directory (migrated on creation);
* ``docbinder_principal_factory`` -- ``make(user_id="user-1", mandate_id="mandate-1",
  feature_instance_id=None, roles=("member",)) -> Principal``;
* ``docbinder_principal`` -- ``docbinder_principal_factory()``: a member of
  ``mandate-1`` at mandate level;
* ``docbinder_run`` -- ``docbinder_binder.start_new_run(docbinder_principal)``: a
  :class:`~docbinder.application.Run` bound to a fresh workflow.

Override ``docbinder_binder`` (or ``docbinder_principal``) in a ``conftest.py`` to
point ``docbinder_run`` at another backend or principal. Nothing beyond the
``docbinder`` package itself is imported until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from docbinder.application import DocBinder, Run
    from docbinder.domain.model import Principal

PrincipalFactory = Callable[..., "Principal"]
"""``make(user_id, mandate_id, feature_instance_id, roles) -> Principal`` (all keywords optional)."""


@pytest.fixture
def docbinder_principal_factory() -> PrincipalFactory:
    """Makes principals; defaults: ``user-1`` in ``mandate-1``, no feature instance, ``member``."""
    from docbinder.domain.model import Principal

    def make(
        user_id: str = "user-1",
        mandate_id: str = "mandate-1",
        feature_instance_id: str | None = None,
        roles: Sequence[str] = ("member",),
    ) -> Principal:
        return Principal(user_id, mandate_id, feature_instance_id, roles=tuple(roles))

    return make


@pytest.fixture
def docbinder_principal(docbinder_principal_factory: PrincipalFactory) -> Principal:
    """A ``member`` of ``mandate-1`` (user ``user-1``, no feature instance)."""
    principal: Principal = docbinder_principal_factory()
    return principal


@pytest.fixture
def docbinder_binder(tmp_path: Path) -> Iterator[DocBinder]:
    """A fresh in-memory binder (``memory://`` metadata and blobs, role-table authorizer).

    Closed when the test ends (its worker threads stop).
    """
    from docbinder.container import build_binder

    with build_binder(
        home=str(tmp_path / "docbinder-home"), database_url="memory://", blob_url="memory://"
    ) as binder:
        yield binder


@pytest.fixture
def docbinder_sqlite_binder(tmp_path: Path) -> Iterator[DocBinder]:
    """The embedded default under a temporary home: ``<home>/docbinder.db`` and ``<home>/blobs``.

    Closed when the test ends, so no connection to the database file stays open.
    """
    from docbinder.container import build_binder

    with build_binder(home=str(tmp_path / "docbinder-home")) as binder:
        yield binder


@pytest.fixture
def docbinder_run(docbinder_binder: DocBinder, docbinder_principal: Principal) -> Run:
    """A run of ``docbinder_principal`` bound to a workflow created for this test."""
    return docbinder_binder.start_new_run(docbinder_principal)
