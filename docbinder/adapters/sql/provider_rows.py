"""Rows of table ``provider_copies``: one converter for the SQLAlchemy and the ``sqlite3`` adapters (B22)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from docbinder.domain.errors import StorageError
from docbinder.domain.model import Scope
from docbinder.domain.providers import ProviderCopy, ProviderCopyKey


def key_columns(key: ProviderCopyKey) -> dict[str, str]:
    """The primary-key columns of ``key``'s row (``feature_key`` is ``''`` for a mandate)."""
    return {
        "sha256": key.sha256,
        "provider": key.provider.value,
        "account": key.account,
        "mandate_id": key.scope.mandate_id,
        "feature_key": key.scope.feature_instance_id or "",
    }


def copy_row(copy: ProviderCopy) -> dict[str, Any]:
    """Every column of ``copy``'s row, datetimes as aware UTC values."""
    return {
        **key_columns(copy.key),
        "feature_instance_id": copy.key.scope.feature_instance_id,
        "state": copy.state.value,
        "claim": copy.claim,
        "claimed_at": copy.claimed_at,
        "file_id": copy.file_id,
        "uri": copy.uri,
        "uploaded_at": copy.uploaded_at,
        "expires_at": copy.expires_at,
        "size": copy.size,
        "upload_token": copy.upload_token,
    }


def copy_from_row(m: Mapping[Any, Any]) -> ProviderCopy:
    """The :class:`ProviderCopy` of a row's mapping; :class:`StorageError` for a corrupt row."""
    try:
        return ProviderCopy(
            ProviderCopyKey(
                m["sha256"],
                m["provider"],
                m["account"],
                Scope(m["mandate_id"], m["feature_instance_id"]),
            ),
            state=m["state"],
            claim=m["claim"],
            claimed_at=m["claimed_at"],
            file_id=m["file_id"],
            uri=m["uri"],
            uploaded_at=m["uploaded_at"],
            expires_at=m["expires_at"],
            size=int(m["size"]),
            upload_token=m.get("upload_token"),
        )
    except Exception as err:
        raise StorageError(f"a stored provider copy is invalid: {err}") from err
