"""The OpenAPI 3.1 description of ``docbinder serve`` (served at ``/openapi.json``).

Written out here, beside the routes of :mod:`docbinder.integrations.http.app`;
a test checks the document against the OpenAPI schema and that every route of
the app is described.
"""

from __future__ import annotations

from typing import Any


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("docbinder")
    except Exception:  # pragma: no cover - an installed docbinder has metadata
        return "0"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = _json(_ref("Error"), "an error: a stable code and one line")
_ERRORS = {
    "401": _ERROR,
    "404": _json(_ref("Error"), "unknown, or not readable by the caller (the same answer)"),
}


def _path_id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _bytes(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document (a fresh dict on each call)."""
    workflow_id = _path_id("workflow_id")
    file_id = _path_id("file_id")
    file_content_responses = {
        "200": _bytes("the whole file"),
        "206": _bytes("one byte range (Range: bytes=first-last)"),
        "304": {"description": "If-None-Match matched the ETag (the SHA-256)"},
        "416": {"description": "the range asked for lies outside the file"},
        **_ERRORS,
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "docbinder",
            "version": _version(),
            "description": "Files of AI-agent workflows: upload, resolve documentLists, "
            "download with ranges, signed expiring links.",
        },
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a token of the token file, or an OIDC JWT",
                }
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message"],
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                            },
                        }
                    },
                },
                "Stored": {
                    "type": "object",
                    "required": ["fileId", "fileName", "mimeType", "size", "sha256", "duplicate"],
                    "properties": {
                        "documentRef": {"type": ["string", "null"]},
                        "documentId": {"type": ["string", "null"]},
                        "fileId": {"type": "string"},
                        "fileName": {"type": "string"},
                        "mimeType": {"type": "string"},
                        "size": {"type": "integer", "minimum": 0},
                        "sha256": {"type": "string"},
                        "duplicate": {"type": "boolean"},
                        "label": {"type": ["string", "null"]},
                    },
                },
                "File": {
                    "type": "object",
                    "properties": {
                        "fileId": {"type": "string"},
                        "fileName": {"type": "string"},
                        "mimeType": {"type": "string"},
                        "size": {"type": "integer"},
                        "sha256": {"type": "string"},
                        "createdBy": {"type": "string"},
                        "createdAt": {"type": "string", "format": "date-time"},
                        "mandateId": {"type": "string"},
                        "featureInstanceId": {"type": ["string", "null"]},
                    },
                },
                "Workflow": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "status": {"type": "string"},
                        "currentRound": {"type": "integer"},
                        "currentTask": {"type": "integer"},
                        "currentAction": {"type": "integer"},
                        "messages": {"type": "array", "items": {"type": "object"}},
                        "documents": {"type": "array", "items": {"type": "object"}},
                    },
                },
                "Resolution": {
                    "type": "object",
                    "required": ["documents", "unresolved"],
                    "properties": {
                        "documents": {"type": "array", "items": {"type": "object"}},
                        "unresolved": {"type": "array", "items": {"type": "object"}},
                        "suggestions": {"type": "array", "items": {"type": "object"}},
                        "content": {"type": "array", "items": {"type": "object"}},
                    },
                },
                "Link": {
                    "type": "object",
                    "required": ["url", "expiresAt"],
                    "properties": {
                        "url": {"type": "string"},
                        "expiresAt": {"type": "string", "format": "date-time"},
                        "linkId": {"type": "string"},
                        "once": {"type": "boolean"},
                        "audience": {"type": ["string", "null"]},
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/health": {
                "get": {
                    "summary": "liveness (no credentials)",
                    "security": [],
                    "responses": {"200": {"description": "the service answers"}},
                }
            },
            "/v1/workflows": {
                "post": {
                    "summary": "create a workflow",
                    "responses": {
                        "201": _json(
                            {"type": "object", "properties": {"id": {"type": "string"}}},
                            "the new workflow's id",
                        ),
                        "401": _ERROR,
                    },
                }
            },
            "/v1/workflows/{workflow_id}": {
                "get": {
                    "summary": "a workflow: messages with labels and counters, documents with refs",
                    "parameters": [workflow_id],
                    "responses": {"200": _json(_ref("Workflow"), "the workflow"), **_ERRORS},
                }
            },
            "/v1/workflows/{workflow_id}/files": {
                "post": {
                    "summary": "upload a file into the workflow (raw body or multipart field file)",
                    "parameters": [
                        workflow_id,
                        {"name": "name", "in": "query", "schema": {"type": "string"}},
                        {"name": "label", "in": "query", "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/octet-stream": {
                                "schema": {"type": "string", "format": "binary"}
                            },
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"file": {"type": "string", "format": "binary"}},
                                }
                            },
                        },
                    },
                    "responses": {
                        "201": _json(_ref("Stored"), "stored and attached"),
                        "413": _json(_ref("Error"), "larger than max_file_size; nothing stored"),
                        **_ERRORS,
                    },
                }
            },
            "/v1/workflows/{workflow_id}/resolve": {
                "post": {
                    "summary": "resolve a documentList of any shape in the workflow",
                    "parameters": [
                        workflow_id,
                        {"name": "content", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"documentList": {}},
                                }
                            }
                        },
                    },
                    "responses": {"200": _json(_ref("Resolution"), "the resolution"), **_ERRORS},
                }
            },
            "/v1/files/{file_id}": {
                "get": {
                    "summary": "a file's metadata",
                    "parameters": [file_id],
                    "responses": {"200": _json(_ref("File"), "the file"), **_ERRORS},
                }
            },
            "/v1/files/{file_id}/content": {
                "get": {
                    "summary": "a file's bytes (Range, ETag, If-None-Match)",
                    "parameters": [
                        file_id,
                        {"name": "download", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "responses": file_content_responses,
                }
            },
            "/v1/files/{file_id}/links": {
                "post": {
                    "summary": "mint a signed, expiring link to the file",
                    "parameters": [file_id],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "expiresIn": {"type": ["integer", "string"]},
                                        "audience": {"type": "string"},
                                        "once": {"type": "boolean"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": _json(_ref("Link"), "the link"),
                        "503": _json(_ref("Error"), "no link key configured (link_keys)"),
                        **_ERRORS,
                    },
                }
            },
            "/v1/links/revoke": {
                "post": {
                    "summary": "revoke a link (its signer or a mandate admin)",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "url": {"type": "string"},
                                        "token": {"type": "string"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {"200": {"description": "revoked"}, "403": _ERROR, "401": _ERROR},
                }
            },
            "/v1/links/{token}": {
                "get": {
                    "summary": "redeem a link (no credentials)",
                    "security": [],
                    "parameters": [
                        _path_id("token"),
                        {"name": "audience", "in": "query", "schema": {"type": "string"}},
                        {"name": "download", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "responses": {
                        **{k: v for k, v in file_content_responses.items() if k not in _ERRORS},
                        "307": {"description": "S3 blobs: a presigned GET of the object"},
                        "403": _json(
                            _ref("Error"),
                            "tampered, unknown key, wrong audience, "
                            "or the signer may no longer read the file",
                        ),
                        "410": _json(_ref("Error"), "expired, revoked, used, deleted or changed"),
                    },
                }
            },
        },
    }
