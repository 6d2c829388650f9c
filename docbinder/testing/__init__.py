"""Contract suites and pytest fixtures for docbinder's ports, shipped in the wheel.

Needs ``pytest`` and ``hypothesis``: ``pip install -e '.[testing]'`` in a clone. Importing
:mod:`docbinder` itself never imports this package (nor pytest).

Contract suites (subclass one per backend, as ``Test...``, and provide its fixture;
see ``docs/backends.md``):

* :class:`BlobStoreContract` (:mod:`.blob_suite`) -- fixture ``store``;
* :class:`MetadataContract` (:mod:`.metadata_suite`) -- fixture ``make_uow_factory``; made of
  one contract per role of the metadata port, with the flags ``supports_versions`` and
  ``supports_concurrency``;
* :class:`AuthorizerContract` (:mod:`.authorizer_suite`) -- fixture ``authorizer``;
* :class:`BridgeContract` (:mod:`.bridge_suite`) -- fixture ``make_binder``: the whole
  bridge over a backend combination;
* :class:`VersionsContract` (:mod:`.versions_suite`) and
  :class:`ExtractionCacheContract` (:mod:`.extraction_cache_suite`);
* ``AdkServiceContract`` in :mod:`.adk_service_suite` (needs the ``adk`` extra) and the
  access model state machine in :mod:`.access_model`.

The pytest plugin (:mod:`.plugin`, loaded through the ``pytest11`` entry point) gives
hosts the ``docbinder_*`` fixtures. Names are resolved lazily (PEP 562), so the plugin
loads without importing the suites.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

import pytest

_SUITES = (
    "access_model",
    "adk_service_suite",
    "authorizer_suite",
    "blob_suite",
    "bridge_suite",
    "extraction_cache_suite",
    "metadata_suite",
    "versions_suite",
)
# The suites' plain asserts get pytest's explanations (they are not test_ modules).
pytest.register_assert_rewrite(*(f"{__name__}.{name}" for name in _SUITES))

_EXPORTS = {
    "AuthorizerContract": "authorizer_suite",
    "BlobStoreContract": "blob_suite",
    "BridgeContract": "bridge_suite",
    "ExtractionCacheContract": "extraction_cache_suite",
    "MetadataContract": "metadata_suite",
    "VersionsContract": "versions_suite",
}

__all__ = [
    "AuthorizerContract",
    "BlobStoreContract",
    "BridgeContract",
    "ExtractionCacheContract",
    "MetadataContract",
    "VersionsContract",
]

if TYPE_CHECKING:
    from docbinder.testing.authorizer_suite import AuthorizerContract
    from docbinder.testing.blob_suite import BlobStoreContract
    from docbinder.testing.bridge_suite import BridgeContract
    from docbinder.testing.extraction_cache_suite import ExtractionCacheContract
    from docbinder.testing.metadata_suite import MetadataContract
    from docbinder.testing.versions_suite import VersionsContract


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
