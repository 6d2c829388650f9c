"""The S3 data source against a moto server over real HTTP on 127.0.0.1 (SPEC C10)."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

import pytest

from docbinder.domain.errors import AmbiguousName, InvalidInput, SizeLimitExceeded
from docbinder.domain.model import ContentKind, Principal
from docbinder.tools import DataSourceError, DataSourceNotFound, S3Source, download_from_data_source
from tests.unit.conftest import make_memory_binder

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

ALICE = Principal("alice", "m1", "f1", roles=("member",))


@pytest.fixture
def source(s3_client: S3Client, s3_bucket: str, s3_endpoint: str) -> S3Source:
    s3_client.put_object(
        Bucket=s3_bucket,
        Key="team/reports/q3.csv",
        Body=b"region,revenue\nNorth,61\n",
        ContentType="text/csv",
    )
    s3_client.put_object(Bucket=s3_bucket, Key="team-secret.txt", Body=b"secret")
    s3_client.put_object(Bucket=s3_bucket, Key="other/x.txt", Body=b"x")
    return S3Source(
        s3_bucket, "team/", endpoint_url=s3_endpoint, region_name="us-east-1", chunk_size=8
    )


def test_download_from_s3_end_to_end(source: S3Source) -> None:
    binder = make_memory_binder()
    run = binder.start_new_run(ALICE)

    result = download_from_data_source(run, source, "reports/q3.csv", service="s3")

    [produced] = result.files
    assert result.text == (
        "Downloaded 'q3.csv' (24 bytes)\n"
        f"  documentList ref: docItem:{produced.document_id}\n"
        f"  file id: {produced.item.id}"
    )
    assert produced.item.mime_type == "text/csv"
    assert run.workflow is not None
    assert run.workflow.messages[0].documents_label == "datasource:s3"
    content = run.get_content({"documents": [{"documentId": produced.document_id}]})
    assert [(p.kind, p.text) for p in content.parts] == [
        (ContentKind.TEXT, "region,revenue\nNorth,61\n")
    ]


def test_s3_source_streams_in_chunks(source: S3Source) -> None:
    download = source.fetch("reports/q3.csv")
    assert (download.name, download.mime_type, download.size) == ("q3.csv", "text/csv", 24)
    with download:
        chunks = list(download.chunks)
    assert chunks == [b"region,r", b"evenue\nN", b"orth,61\n"]


def test_s3_source_stays_below_its_prefix(source: S3Source) -> None:
    assert source.key_for("reports/q3.csv") == "team/reports/q3.csv"
    with pytest.raises(InvalidInput, match=r"the key '../other/x.txt' must not contain '..'"):
        source.fetch("../other/x.txt")
    with pytest.raises(InvalidInput, match="must be relative"):
        source.fetch("/other/x.txt")
    # "team-secret.txt" shares the prefix's first characters but is not below "team/"
    with pytest.raises(DataSourceNotFound):
        source.fetch("-secret.txt")


def test_missing_objects_and_buckets(source: S3Source, s3_endpoint: str, s3_env: None) -> None:
    with pytest.raises(DataSourceNotFound) as caught:
        source.fetch("reports/nope.csv")
    assert str(caught.value) == f"no object 'reports/nope.csv' in S3 data source {source.where}"
    assert isinstance(caught.value, FileNotFoundError)
    gone = S3Source("docbinder-no-such-bucket", endpoint_url=s3_endpoint, region_name="us-east-1")
    with pytest.raises(DataSourceError, match=r"the bucket does not exist \(NoSuchBucket\)"):
        gone.fetch("x.txt")


def test_s3_size_limit(s3_endpoint: str, s3_bucket: str, source: S3Source) -> None:
    small = S3Source(
        s3_bucket, "team", endpoint_url=s3_endpoint, region_name="us-east-1", max_bytes=10
    )
    with pytest.raises(SizeLimitExceeded, match="size limit of 10 bytes"):
        small.fetch("reports/q3.csv")


def test_an_object_stored_decomposed_is_found_by_the_composed_name(
    s3_client: S3Client, s3_bucket: str, source: S3Source
) -> None:
    nfd = unicodedata.normalize("NFD", "reports/Kostenschätzung Q3.csv")
    s3_client.put_object(Bucket=s3_bucket, Key=f"team/{nfd}", Body=b"Posten;Betrag\n")
    binder = make_memory_binder()
    run = binder.start_new_run(ALICE)
    nfc = unicodedata.normalize("NFC", "reports/Kostenschätzung Q3.csv")
    result = download_from_data_source(run, source, nfc, service="s3")
    [produced] = result.files
    assert produced.item.file_name == nfd.rsplit("/", 1)[-1]
    assert run.read_file(produced.item.id) == b"Posten;Betrag\n"


def test_s3_look_alikes_stay_below_the_prefix_and_ambiguity_is_refused(
    s3_client: S3Client, s3_bucket: str, source: S3Source
) -> None:
    nfc = unicodedata.normalize("NFC", "Résumé.txt")
    nfd = unicodedata.normalize("NFD", "Résumé.txt")
    s3_client.put_object(Bucket=s3_bucket, Key=f"other/{nfd}", Body=b"outside")
    with pytest.raises(DataSourceNotFound):
        source.fetch(nfc)  # the only look-alike is outside "team/"
    s3_client.put_object(Bucket=s3_bucket, Key=f"team/{nfc}", Body=b"1")
    s3_client.put_object(Bucket=s3_bucket, Key=f"team/{nfd}", Body=b"2")
    half = unicodedata.normalize("NFD", nfc[:3]) + nfc[3:]
    with pytest.raises(AmbiguousName) as caught:
        source.fetch(half)
    assert set(caught.value.candidates) == {nfc, nfd}
    with source.fetch(nfd) as exact:
        assert b"".join(exact.chunks) == b"2"
