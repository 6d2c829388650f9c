"""Translation of botocore errors into docbinder's error tree, at the S3 adapter's boundary.

Only :func:`translate` touches botocore, and it imports it lazily, so this module
imports without the ``[s3]`` extra.

Mapping (``code`` is the S3 error code, ``status`` the HTTP status):

================================================  =========================================
botocore error                                    docbinder error
================================================  =========================================
``NoSuchBucket``                                  :class:`S3StorageError`, names the bucket
``NoSuchKey``, ``NotFound``, status 404           :class:`~docbinder.domain.errors.BlobMissing`
``AccessDenied``, bad/expired credentials, 403    :class:`S3StorageError` (not retryable)
throttling codes (``SlowDown``, ``Throttling``,   :class:`S3Throttled` (``retryable=True``)
``RequestLimitExceeded``, ... ), status 429
``InternalError``, ``RequestTimeout``, 5xx        :class:`S3StorageError` (``retryable=True``)
any other ``ClientError``                         :class:`S3StorageError` (not retryable)
no credentials found                              :class:`S3StorageError` (not retryable)
endpoint unreachable, timeouts, broken stream     :class:`S3StorageError` (``retryable=True``)
any other ``BotoCoreError``                       :class:`S3StorageError` (not retryable)
================================================  =========================================

A refused request (403) is a backend credential or policy problem of the
deployment, not a decision of docbinder's :class:`~docbinder.ports.authorizer.Authorizer`,
so it is a :class:`~docbinder.domain.errors.StorageError` with a message that
says what to check, never :class:`~docbinder.domain.errors.AccessDenied`.

The throttling and transient code lists are the ones botocore's "standard"
retry mode uses (``botocore/retries/standard.py``). Retryable errors reach the
caller only after botocore's own retries were used up.
"""

from __future__ import annotations

from typing import Any

from docbinder.domain.errors import BlobMissing, DocbinderError, StorageError

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
"""S3/AWS error codes that mean "slow down" (botocore standard retry mode)."""

TRANSIENT_CODES = frozenset(
    {"InternalError", "ServiceUnavailable", "RequestTimeout", "RequestTimeoutException"}
)
"""Error codes of server-side faults that may pass when the request is repeated."""

MISSING_KEY_CODES = frozenset({"NoSuchKey", "NotFound", "404"})
"""Error codes meaning the object is not there (``HEAD`` answers a bare ``404``)."""

DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "Forbidden",
        "403",
        "AllAccessDisabled",
        "AccountProblem",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)
"""Error codes of a refused request: wrong, expired or insufficient credentials."""


class S3StorageError(StorageError):
    """An S3 request failed.

    ``code`` is the S3 error code (``"NoSuchBucket"``, ``"SlowDown"``, ...)
    or ``None`` for client-side faults; ``retryable`` says whether repeating
    the same request later may succeed. The botocore error is chained as
    ``__cause__``.
    """

    def __init__(self, message: str, *, code: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable


class S3Throttled(S3StorageError):
    """S3 asked the client to slow down (``SlowDown``, ``Throttling``, HTTP 429); retryable."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code, retryable=True)


def client_error_details(exc: BaseException) -> tuple[str, int | None, str]:
    """``(code, HTTP status, message)`` of a botocore ``ClientError`` (empty/None when absent)."""
    response: Any = getattr(exc, "response", None) or {}
    error = response.get("Error") or {}
    meta = response.get("ResponseMetadata") or {}
    status = meta.get("HTTPStatusCode")
    return (
        str(error.get("Code") or ""),
        status if isinstance(status, int) else None,
        str(error.get("Message") or ""),
    )


def translate(
    exc: BaseException, *, bucket: str, where: str, key: str | None = None
) -> DocbinderError:
    """Return the docbinder error for a botocore ``ClientError`` or ``BotoCoreError``.

    ``bucket`` and ``where`` (the store's URL plus endpoint, for messages) name
    the store; ``key`` is the blob key of the failed call, if it had one. A
    ``NoSuchKey``/404 without ``key`` (a listing) is reported as a missing
    bucket. The caller chains ``exc`` (``raise translate(exc, ...) from exc``).
    """
    from botocore import exceptions as bx

    if isinstance(exc, bx.ClientError):
        code, status, message = client_error_details(exc)
        detail = f"{code or status}: {message}" if message else f"{code or status}"
        if code == "NoSuchBucket" or (key is None and status == 404):
            return S3StorageError(f"S3 bucket {bucket!r} does not exist ({where})", code=code)
        if code in MISSING_KEY_CODES or status == 404:
            return BlobMissing(f"blob {key} is missing from {where}")
        if code in DENIED_CODES or status == 403:
            return S3StorageError(
                f"S3 refused access to bucket {bucket!r} ({where}): {detail}; check the "
                "credentials and the bucket policy",
                code=code,
            )
        if code in THROTTLING_CODES or status == 429:
            return S3Throttled(
                f"S3 is throttling requests to bucket {bucket!r}: {detail}", code=code
            )
        if code in TRANSIENT_CODES or (status is not None and status >= 500):
            return S3StorageError(
                f"S3 server error for bucket {bucket!r} ({where}): {detail}",
                code=code,
                retryable=True,
            )
        return S3StorageError(
            f"S3 request failed for bucket {bucket!r} ({where}): {detail}", code=code
        )
    if isinstance(
        exc, bx.NoCredentialsError | bx.PartialCredentialsError | bx.CredentialRetrievalError
    ):
        return S3StorageError(
            f"no usable S3 credentials for bucket {bucket!r}: {exc}; set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
        )
    if isinstance(exc, bx.ConnectionError | bx.HTTPClientError):
        return S3StorageError(
            f"cannot reach S3 for bucket {bucket!r} ({where}): {exc}", retryable=True
        )
    return S3StorageError(f"S3 client error for bucket {bucket!r} ({where}): {exc}")
