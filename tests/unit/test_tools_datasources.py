"""Data source adapters: local directory confinement, HTTP streaming and errors (SPEC C10)."""

from __future__ import annotations

import os
import socket
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.domain.errors import (
    AmbiguousName,
    ConfigurationError,
    InvalidInput,
    MissingExtra,
    SizeLimitExceeded,
)
from docbinder.tools import (
    DataSourceError,
    DataSourceNotFound,
    Download,
    HttpSource,
    LocalDirectorySource,
    S3Source,
    download_from_data_source,
)
from docbinder.tools.datasources import file_name_from_response, relative_parts
from tests.unit.test_tools_fixtures import (
    ALICE,
    LOOPBACK,
    LoopbackServer,
    new_binder,
    serve_loopback,
)


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    """A loopback HTTP server on 127.0.0.1 for one test."""
    yield from serve_loopback()


def read_all(download: Download) -> bytes:
    with download:
        return b"".join(download.chunks)


# -- relative references --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        ("a.txt", ("a.txt",)),
        ("dir/sub/a.txt", ("dir", "sub", "a.txt")),
        ("./dir//a.txt", ("dir", "a.txt")),
        ("dir\\a.txt", ("dir", "a.txt")),
        ("..data/a..b", ("..data", "a..b")),
    ],
)
def test_relative_parts_accepts_relative_paths(ref: str, parts: tuple[str, ...]) -> None:
    assert relative_parts(ref) == parts


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("", "the path must be a non-empty string"),
        ("../etc/passwd", "the path '../etc/passwd' must not contain '..'"),
        ("dir/../../x", "the path 'dir/../../x' must not contain '..'"),
        ("dir\\..\\x", "the path 'dir\\\\..\\\\x' must not contain '..'"),
        ("/etc/passwd", "the path '/etc/passwd' must be relative to the data source"),
        (
            "C:\\Windows\\win.ini",
            "the path 'C:\\\\Windows\\\\win.ini' must be relative to the data source",
        ),
        (
            "\\\\server\\share\\x",
            "the path '\\\\\\\\server\\\\share\\\\x' must be relative to the data source",
        ),
        ("a\x00b", "the path 'a\\x00b' contains control characters"),
        ("./.", "the path './.' names no file"),
    ],
)
def test_relative_parts_refuses_escapes(ref: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        relative_parts(ref)
    assert str(caught.value) == message


# -- local directory ------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "reports").mkdir(parents=True)
    (base / "reports" / "q3.csv").write_bytes(b"a,b\n1,2\n")
    (tmp_path / "secret.txt").write_bytes(b"secret")
    return base


def test_local_source_streams_a_file_in_chunks(root: Path) -> None:
    download = LocalDirectorySource(root, chunk_size=3).fetch("reports/q3.csv")
    assert (download.name, download.mime_type, download.size) == ("q3.csv", None, 8)
    with download:
        assert list(download.chunks) == [b"a,b", b"\n1,", b"2\n"]


def test_local_source_follows_links_inside_the_root(root: Path) -> None:
    os.symlink(root / "reports" / "q3.csv", root / "latest.csv")
    download = LocalDirectorySource(root).fetch("latest.csv")
    assert download.name == "latest.csv"
    assert read_all(download) == b"a,b\n1,2\n"


def test_local_source_refuses_links_out_of_the_root(root: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", root / "leak.txt")
    os.symlink(tmp_path, root / "up")
    source = LocalDirectorySource(root)
    with pytest.raises(
        InvalidInput, match=r"the path 'leak.txt' leads outside the data source directory"
    ):
        source.fetch("leak.txt")
    with pytest.raises(InvalidInput, match=r"the path 'up/secret.txt' leads outside"):
        source.fetch("up/secret.txt")
    with pytest.raises(InvalidInput, match=r"must not contain '..'"):
        source.fetch("../secret.txt")
    with pytest.raises(InvalidInput, match="must be relative"):
        source.fetch(str(tmp_path / "secret.txt"))


def test_local_source_errors(root: Path) -> None:
    source = LocalDirectorySource(root, max_bytes=4)
    with pytest.raises(DataSourceNotFound, match=r"no file 'missing.txt' in data source"):
        source.fetch("missing.txt")
    with pytest.raises(InvalidInput, match="the path 'reports' is not a regular file"):
        source.fetch("reports")
    with pytest.raises(SizeLimitExceeded, match="size limit of 4 bytes"):
        source.fetch("reports/q3.csv")
    with pytest.raises(ConfigurationError, match="does not exist"):
        LocalDirectorySource(root / "nope")
    with pytest.raises(ConfigurationError, match="is not a directory"):
        LocalDirectorySource(root / "reports" / "q3.csv")


def test_a_refused_path_stores_nothing(root: Path) -> None:
    binder = new_binder()
    run = binder.start_new_run(ALICE)
    with pytest.raises(InvalidInput):
        download_from_data_source(run, LocalDirectorySource(root), "../secret.txt", service="disk")
    assert list(binder.blobs.keys()) == []
    assert run.workflow is not None and run.workflow.messages == ()


# -- HTTP -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "url", "name"),
    [
        ('attachment; filename="report.pdf"', "http://h/x/y", "report.pdf"),
        ("attachment; filename*=UTF-8''na%C3%AFve%20file.txt", "http://h/x", "naïve file.txt"),
        ('attachment; filename="../../etc/passwd"', "http://h/x", "passwd"),
        ('attachment; filename="C:\\temp\\a.txt"', "http://h/x", "a.txt"),
        ("inline", "http://h/files/Q3%20report.csv?sig=1", "Q3 report.csv"),
        (None, "http://h/", "download"),
        (None, "http://h", "download"),
        ('attachment; filename=".."', "http://h/data.json", "data.json"),
    ],
)
def test_file_name_from_response(header: str | None, url: str, name: str) -> None:
    assert file_name_from_response(header, url) == name


def test_http_source_streams_name_type_and_size(http_server: LoopbackServer) -> None:
    url = http_server.route(
        "/files/data.json",
        headers={"Content-Type": "application/json; charset=utf-8"},
        chunks=(b'{"a":', b" 1}"),
    )
    download = HttpSource(trust_env=False, allowed_networks=LOOPBACK).fetch(url)
    assert (download.name, download.mime_type, download.size) == (
        "data.json",
        "application/json",
        8,
    )
    assert read_all(download) == b'{"a": 1}'
    assert http_server.seen[0].method == "GET"


def test_http_source_sends_configured_headers(http_server: LoopbackServer) -> None:
    url = http_server.route("/a.txt", chunks=(b"x",))
    read_all(
        HttpSource(
            headers={"Authorization": "Bearer t0k"}, trust_env=False, allowed_networks=LOOPBACK
        ).fetch(url)
    )
    assert http_server.seen[0].headers["authorization"] == "Bearer t0k"


def test_http_status_errors(http_server: LoopbackServer) -> None:
    source = HttpSource(trust_env=False, allowed_networks=LOOPBACK)
    missing = http_server.url("/missing")
    with pytest.raises(DataSourceNotFound) as not_found:
        source.fetch(missing)
    assert str(not_found.value) == f"GET {missing} failed: HTTP 404 Not Found"
    assert not_found.value.status == 404 and not not_found.value.retryable
    assert isinstance(not_found.value, FileNotFoundError)

    broken = http_server.route("/broken", status=503)
    with pytest.raises(DataSourceError) as unavailable:
        source.fetch(broken)
    assert str(unavailable.value) == f"GET {broken} failed: HTTP 503 Service Unavailable"
    assert unavailable.value.retryable

    secret = http_server.route("/secret", status=403)
    with pytest.raises(DataSourceError, match="HTTP 403 Forbidden; check the credentials"):
        source.fetch(secret)


def test_http_timeout_is_a_clear_error(http_server: LoopbackServer) -> None:
    url = http_server.route("/slow", chunks=(b"x",), delay_s=1.0, delay_headers=True)
    with pytest.raises(DataSourceError) as caught:
        HttpSource(timeout_s=0.2, trust_env=False, allowed_networks=LOOPBACK).fetch(url)
    assert str(caught.value) == f"GET {url} timed out after 0.2 s"
    assert caught.value.retryable


def test_http_timeout_while_streaming_stores_nothing(http_server: LoopbackServer) -> None:
    url = http_server.route("/trickle", chunks=(b"a" * 10, b"b" * 10), length=False, delay_s=0.6)
    binder = new_binder()
    run = binder.start_new_run(ALICE)
    # The headers come at once, each chunk 0.6 s later: the first read already times out.
    with pytest.raises(DataSourceError, match=r"timed out after 0.2 s while reading the body"):
        download_from_data_source(
            run,
            HttpSource(timeout_s=0.2, trust_env=False, allowed_networks=LOOPBACK),
            url,
            service="web",
        )
    assert list(binder.blobs.keys()) == []
    assert run.list_files() == []


def test_connection_refused_is_a_clear_error() -> None:
    with socket.socket() as probe:  # a loopback port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x"
    with pytest.raises(DataSourceError) as caught:
        HttpSource(timeout_s=1, trust_env=False, allowed_networks=LOOPBACK).fetch(url)
    assert str(caught.value).startswith(f"GET {url} failed: ")
    assert caught.value.retryable and caught.value.status is None


def test_announced_size_over_the_limit_is_refused_before_reading(
    http_server: LoopbackServer,
) -> None:
    url = http_server.route("/big", chunks=(b"z" * 2000,))
    with pytest.raises(SizeLimitExceeded, match="size limit of 1000 bytes"):
        HttpSource(max_bytes=1000, trust_env=False, allowed_networks=LOOPBACK).fetch(url)


def test_size_limit_is_enforced_while_streaming(http_server: LoopbackServer) -> None:
    url = http_server.route("/unannounced", chunks=(b"z" * 700, b"z" * 700), length=False)
    download = HttpSource(
        max_bytes=1000, chunk_size=500, trust_env=False, allowed_networks=LOOPBACK
    ).fetch(url)
    assert download.size is None
    with pytest.raises(SizeLimitExceeded):
        read_all(download)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "file:///etc/passwd",
            "only http and https URLs can be downloaded, got 'file:///etc/passwd'",
        ),
        (
            "ftp://example.org/x",
            "only http and https URLs can be downloaded, got 'ftp://example.org/x'",
        ),
        ("http:///nohost", "the URL 'http:///nohost' has no host"),
        ("", "the URL must be a non-empty string"),
    ],
)
def test_http_source_refuses_other_urls(url: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        HttpSource(trust_env=False, allowed_networks=LOOPBACK).fetch(url)
    assert str(caught.value) == message


def test_allowed_hosts_apply_to_redirects(http_server: LoopbackServer) -> None:
    http_server.route("/final.txt", chunks=(b"ok",))
    elsewhere = http_server.route("/away", status=302, headers={"Location": "http://localhost:9/x"})
    inside = http_server.route("/hop", status=302, headers={"Location": "/final.txt"})
    source = HttpSource(allowed_hosts=["127.0.0.1"], trust_env=False, allowed_networks=LOOPBACK)
    download = source.fetch(inside)
    assert download.name == "final.txt"
    assert read_all(download) == b"ok"
    with pytest.raises(InvalidInput, match="downloads from host 'localhost' are not allowed"):
        source.fetch(elsewhere)
    with pytest.raises(InvalidInput, match=r"downloads from host 'example.org' are not allowed"):
        source.fetch("https://example.org/x")


def test_download_close_releases_an_unread_response(http_server: LoopbackServer) -> None:
    url = http_server.route("/a.txt", chunks=(b"abc",))
    download = HttpSource(trust_env=False, allowed_networks=LOOPBACK).fetch(url)
    download.close()
    download.close()  # idempotent
    assert list(download.chunks) == []


# -- S3 without boto3 -----------------------------------------------------------------------


def test_s3_source_without_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(MissingExtra) as caught:
        S3Source("bucket", "prefix")
    assert str(caught.value) == (
        "S3 data source needs the optional dependency 'boto3': install it from a clone "
        "of docbinder with pip install -e '.[s3]'"
    )


# -- internal addresses are refused by default (issue 17 kind 11) ----------------------------


def test_loopback_server_is_refused_without_an_allow_list(http_server: LoopbackServer) -> None:
    url = http_server.route("/secret.txt", chunks=(b"secret",))
    with pytest.raises(InvalidInput, match=r"resolves to 127\.0\.0\.1, a loopback address"):
        HttpSource(trust_env=False).fetch(url)
    assert http_server.seen == []
    assert read_all(HttpSource(trust_env=False, allowed_networks=LOOPBACK).fetch(url)) == b"secret"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://[fd00:ec2::254]/", "private"),
        ("http://0.0.0.0/", "a private address"),
        ("http://100.100.100.200/", "not a public address"),
        ("http://localhost/", "loopback"),
        ("http://2130706433/", "loopback"),
    ],
)
def test_internal_addresses_are_refused_before_connecting(url: str, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        HttpSource(trust_env=False).fetch(url)


def test_a_redirect_to_an_internal_address_is_refused(http_server: LoopbackServer) -> None:
    port = http_server.base_url.rsplit(":", 1)[1]
    hop = http_server.route("/hop", status=302, headers={"Location": f"http://127.0.0.2:{port}/x"})
    meta = http_server.route("/meta", status=302, headers={"Location": "http://169.254.169.254/"})
    source = HttpSource(trust_env=False, allowed_networks=["127.0.0.1/32"])
    with pytest.raises(InvalidInput, match=r"127\.0\.0\.2, a loopback address"):
        source.fetch(hop)
    with pytest.raises(InvalidInput, match="link-local"):
        source.fetch(meta)
    assert [s.path for s in http_server.seen] == ["/hop", "/meta"]


def test_a_name_that_resolves_elsewhere_when_connecting_is_refused(
    http_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the check and the connection use the same checked address."""
    import socket

    port = int(http_server.base_url.rsplit(":", 1)[1])
    http_server.route("/x", chunks=(b"internal",))
    answers = iter(["93.184.216.34", "127.0.0.1", "127.0.0.1"])
    real = socket.getaddrinfo

    def rebinding(host: str, *args: object, **kwargs: object) -> list[object]:
        if host == "rebind.test":
            address = next(answers)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with pytest.raises(InvalidInput, match=r"rebind\.test.*127\.0\.0\.1, a loopback address"):
        HttpSource(trust_env=False).fetch(f"http://rebind.test:{port}/x")
    assert http_server.seen == []


def test_allowed_networks_must_be_networks() -> None:
    with pytest.raises(InvalidInput, match="allowed_networks"):
        HttpSource(allowed_networks=["not-a-network"])


# -- names that look the same (Unicode NFC / NFD) ---------------------------------------------

NFC_NAME = unicodedata.normalize("NFC", "Kostenschätzung Q3.csv")
NFD_NAME = unicodedata.normalize("NFD", "Kostenschätzung Q3.csv")


def test_a_file_stored_decomposed_is_found_by_the_composed_name(tmp_path: Path) -> None:
    (tmp_path / NFD_NAME).write_bytes(b"Posten;Betrag\nMiete;1200\n")
    assert NFC_NAME != NFD_NAME
    binder = new_binder()
    run = binder.start_new_run(ALICE)
    result = download_from_data_source(
        run, LocalDirectorySource(tmp_path), NFC_NAME, service="share"
    )
    [produced] = result.files
    assert produced.item.file_name == NFD_NAME  # the name as the source has it
    assert produced.document_id is not None
    content = run.get_content([f"docItem:{produced.document_id}"])
    assert [p.text for p in content.parts] == ["Posten;Betrag\nMiete;1200\n"]


def test_a_decomposed_directory_and_a_composed_file_are_both_found(tmp_path: Path) -> None:
    folder = tmp_path / unicodedata.normalize("NFD", "Berichte Übersee")
    folder.mkdir()
    (folder / "Résumé.txt").write_bytes(b"ok")  # NFC file name inside an NFD directory
    ref = unicodedata.normalize("NFD", "Berichte Übersee/Résumé.txt")  # and asked the other way
    download = LocalDirectorySource(tmp_path).fetch(ref)
    assert download.name == "Résumé.txt"
    assert read_all(download) == b"ok"


def test_the_exact_spelling_wins_over_a_look_alike(tmp_path: Path) -> None:
    (tmp_path / NFC_NAME).write_bytes(b"composed")
    (tmp_path / NFD_NAME).write_bytes(b"decomposed")
    source = LocalDirectorySource(tmp_path)
    assert read_all(source.fetch(NFC_NAME)) == b"composed"
    assert read_all(source.fetch(NFD_NAME)) == b"decomposed"


def test_several_look_alikes_are_refused_with_every_spelling_shown(tmp_path: Path) -> None:
    nfc = unicodedata.normalize("NFC", "Résumé.txt")
    nfd = unicodedata.normalize("NFD", "Résumé.txt")
    half = unicodedata.normalize("NFD", nfc[:3]) + nfc[3:]  # first é decomposed, last composed
    assert len({nfc, nfd, half}) == 3
    (tmp_path / nfc).write_bytes(b"1")
    (tmp_path / nfd).write_bytes(b"2")
    with pytest.raises(AmbiguousName) as caught:
        LocalDirectorySource(tmp_path).fetch(half)
    assert isinstance(caught.value, InvalidInput)
    assert set(caught.value.candidates) == {nfc, nfd}
    message = str(caught.value)
    assert ascii(nfc) in message and ascii(nfd) in message and "exact spelling" in message


def test_names_that_only_resemble_each_other_are_not_matched(tmp_path: Path) -> None:
    (tmp_path / "ﬁle.txt").write_bytes(b"ligature")  # NFKC, not canonical: a different name
    (tmp_path / "Straße.txt").write_bytes(b"sharp s")
    source = LocalDirectorySource(tmp_path)
    with pytest.raises(DataSourceNotFound):
        source.fetch("file.txt")
    with pytest.raises(DataSourceNotFound):
        source.fetch("STRASSE.txt")
