"""``docbinder mcp``: serve the docbinder tools and a workflow's documents over MCP.

Needs the ``mcp`` extra; the integration is imported only when the command runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docbinder.cli.common import handles_errors
from docbinder.cli.output import err, masked_url
from docbinder.cli.state import STATE
from docbinder.domain.errors import InvalidInput

if TYPE_CHECKING:
    from docbinder.tools import LocalDirectorySource

TRANSPORTS = ("stdio", "streamable-http")


@handles_errors
def mcp(
    transport: Annotated[
        str, typer.Option(help="stdio (default; one session per process) or streamable-http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="HTTP host to bind; anything but loopback needs --tokens.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workflow: Annotated[
        str | None,
        typer.Option(
            "--workflow", "-w", help="Join this workflow (default: a new workflow per session)."
        ),
    ] = None,
    tokens: Annotated[
        Path | None,
        typer.Option(
            envvar="DOCBINDER_MCP_TOKENS",
            help="TOML file of bearer token hashes and their principals (HTTP only).",
        ),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(help="Data source NAME=DIRECTORY for download_from_data_source (repeatable)."),
    ] = None,
    image_url: Annotated[
        str | None,
        typer.Option(
            envvar="DOCBINDER_IMAGE_URL",
            help="OpenAI-compatible images API root (enables generate_image); "
            "key from DOCBINDER_IMAGE_API_KEY.",
        ),
    ] = None,
    image_model: Annotated[
        str, typer.Option(envvar="DOCBINDER_IMAGE_MODEL", help="Image model name.")
    ] = "dall-e-2",
) -> None:
    """Serve the docbinder tools and the workflow's documents over MCP (needs the mcp extra: pip install -e '.\\[mcp]' in a clone)."""
    import anyio

    from docbinder.integrations.mcp import BearerTokens, DocbinderMcpServer, check_http_host

    _check_transport(transport, tokens, port)
    _log_warnings()
    sources = _data_sources(source or [])
    generator = _image_generator(image_url, image_model)
    token_map = BearerTokens.load(tokens) if tokens is not None else None
    server = DocbinderMcpServer(
        STATE.binder(),
        STATE.principal,
        workflow_id=workflow,
        data_sources=sources,
        image_generator=generator,
    )
    if workflow is not None and token_map is None:
        STATE.binder().get_workflow(STATE.principal, workflow)  # fail now, not at the first call
    about = _about(workflow, token_map, transport)
    if transport == "stdio":
        err.print(f"docbinder MCP server on stdio {about}", markup=False)
        _exit_on_interrupt()
        anyio.run(server.run_stdio)
        return
    check_http_host(host, token_map)
    shown = f"[{host}]" if ":" in host else host
    err.print(f"docbinder MCP server on http://{shown}:{port}/mcp {about}", markup=False)
    from docbinder.integrations.httpguard import HttpLimits

    server.run_http(
        host=host, port=port, tokens=token_map, limits=HttpLimits.from_settings(STATE.settings)
    )


def _check_transport(transport: str, tokens: Path | None, port: int) -> None:
    """:class:`InvalidInput` for an unknown transport, tokens on stdio, or a port out of range."""
    if transport not in TRANSPORTS:
        raise InvalidInput(f"--transport must be stdio or streamable-http, got {transport!r}")
    if transport == "stdio" and tokens is not None:
        raise InvalidInput("--tokens applies to --transport streamable-http only")
    if not 0 < port < 65536:
        raise InvalidInput(f"--port must be from 1 to 65535, got {port}")


def _data_sources(entries: list[str]) -> dict[str, LocalDirectorySource]:
    """``--source NAME=DIRECTORY`` entries as data sources by name."""
    from docbinder.tools import LocalDirectorySource

    sources = {}
    for entry in entries:
        name, sep, directory = entry.partition("=")
        if not sep or not name.strip() or not directory:
            raise InvalidInput(f"--source must look like NAME=DIRECTORY, got {entry!r}")
        sources[name.strip()] = LocalDirectorySource(Path(directory).expanduser())
    return sources


def _image_generator(image_url: str | None, image_model: str) -> Any:
    """The image generator for ``generate_image`` (``None``: the tool is not offered)."""
    if not image_url:
        return None
    from docbinder.tools import OpenAICompatibleImageGenerator

    return OpenAICompatibleImageGenerator(
        image_url, os.environ.get("DOCBINDER_IMAGE_API_KEY"), model=image_model
    )


def _log_warnings() -> None:
    """Show warnings on stderr, a server's log, unless ``-v`` already shows more.

    The other commands show errors only by default. A server answers a storage
    fault with a fixed sentence that says the cause is in the server log
    (:func:`docbinder.toolset.public_message`); those causes, and the refused
    hosts, sessions and connections of the HTTP faces, are logged as warnings.
    """
    root = logging.getLogger("docbinder")
    if root.getEffectiveLevel() > logging.WARNING:
        root.setLevel(logging.WARNING)


def _about(workflow: str | None, token_map: Any, transport: str = "stdio") -> str:
    """Who the server acts as, which stores it serves and the workflow: its first log line.

    MCP clients start the server with a few environment variables only, so the
    store it serves may not be the one the user's shell gives the CLI: the first
    line of its log (stderr, which clients keep) names it. Without ``workflow``
    the line says where workflows come from on ``transport`` (ADR 0054): over
    stdio the process is one conversation; over HTTP each handshake session is
    one, and each sessionless producing call without handle starts a workflow.
    """
    store = f"metadata {masked_url(STATE.settings.database_url)}, blobs {STATE.binder().blobs.url}"
    who = (
        "bearer-token principals"
        if token_map
        else f"user {STATE.principal.user_id} of mandate {STATE.principal.mandate_id}"
    )
    default = (
        "a new one at the first producing call"
        if transport == "stdio"
        else "a new one per session, and per sessionless producing call without `workflow`"
    )
    about = f"as {who}; {store}; workflow: {workflow or default}"
    from docbinder.toolset import unavailable_tools

    left_out = unavailable_tools()
    if left_out:
        about += f"; left out: {', '.join(left_out)} ({next(iter(left_out.values()))})"
    return about


def _exit_on_interrupt() -> None:
    """Make Ctrl-C (SIGINT) end the stdio server at once, with exit status 130.

    The stdio transport reads standard input in a worker thread that a
    ``KeyboardInterrupt`` cannot stop: the process would wait for the next
    line or the end of input. A tool call cut off this way is what a killed
    process leaves (a temp file or an unnamed blob that ``gc`` removes,
    never a FileItem without its blob: SPEC section 5).
    """
    import signal

    def stop(_signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(2, b"error: interrupted\n")
        os._exit(130)

    signal.signal(signal.SIGINT, stop)


@handles_errors
def serve(
    host: Annotated[
        str,
        typer.Option(help="Host to bind; anything but loopback needs --tokens or oidc_issuer."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8080,
    tokens: Annotated[
        Path | None,
        typer.Option(
            envvar="DOCBINDER_TOKENS",
            help="TOML file of bearer token hashes and their principals (as for docbinder mcp).",
        ),
    ] = None,
    mcp_endpoint: Annotated[
        bool,
        typer.Option(
            "--mcp/--no-mcp",
            help="Mount the MCP streamable-HTTP endpoint at /mcp (same sign-in as the API).",
        ),
    ] = True,
    signin: Annotated[
        str | None,
        typer.Option(
            help="Print a one-time sign-in link to the inspector page of this workflow id."
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(help="Processes serving the port (forked; each with its own connections)."),
    ] = 1,
) -> None:
    """Serve files over HTTP: the API, signed links, the inspector page and /mcp (needs the serve extra: pip install -e '.\\[serve]' in a clone)."""
    from docbinder.integrations import http
    from docbinder.integrations.httpguard import HttpLimits, listen, serve_workers
    from docbinder.integrations.httpguard import serve as guarded_serve

    if not 0 < port < 65536:
        raise InvalidInput(f"--port must be from 1 to 65535, got {port}")
    if not 1 <= workers <= 64:
        raise InvalidInput(f"--workers must be from 1 to 64, got {workers}")
    _log_warnings()
    settings = STATE.settings
    if tokens is not None and settings.oidc_issuer:
        raise InvalidInput("give --tokens or oidc_issuer, not both")
    binder = STATE.binder()
    token_map: Any = None
    identity: Any
    if tokens is not None:
        from docbinder.integrations.mcp import BearerTokens

        token_map = BearerTokens.load(tokens)
        identity = http.TokenIdentity(token_map)
    elif settings.oidc_issuer:
        identity = http.OidcIdentity(settings)
    else:
        identity = http.FixedIdentity(STATE.principal)
    http.check_bind(host, identity)
    limits = HttpLimits.from_settings(settings)
    with_mcp = mcp_endpoint
    mcp_tokens: Any = token_map
    if settings.oidc_issuer:  # /mcp signs in with the same JWTs as the API
        mcp_tokens = http.OidcTokens(identity)

    def make_app(binder: Any) -> Any:
        mcp_app = None
        if with_mcp:
            from docbinder.integrations.mcp import DocbinderMcpServer

            mcp_app = DocbinderMcpServer(binder, STATE.principal).http_app(
                host=host, port=port, tokens=mcp_tokens, limits=limits
            )
        return http.build_app(
            binder,
            identity,
            host=host,
            port=port,
            limits=limits,
            public_url=settings.public_url,
            mcp_app=mcp_app,
        )

    app = make_app(binder)
    sock = listen(host, port, limits)  # before saying it serves: a taken port is an error line
    shown = f"[{host}]" if ":" in host else host
    base = settings.public_url or f"http://{shown}:{port}"
    store = f"metadata {masked_url(settings.database_url)}, blobs {binder.blobs.url}"
    links = (
        "signed links on"
        if binder.mint_link.keys is not None
        else "signed links off (no link_keys)"
    )
    err.print(
        f"docbinder serving {base} (API /v1, /openapi.json, inspector /ui/"
        f"{', MCP /mcp' if with_mcp else ''}) as {identity.description}; "
        f"{store}; {links}{f'; {workers} processes' if workers > 1 else ''}",
        markup=False,
    )
    if signin is not None:
        from docbinder.integrations.http.ui import Inspector

        url = Inspector(http.HttpApi(binder, identity, public_url=base)).signin_url(
            base, STATE.principal, f"/ui/workflows/{signin}"
        )
        err.print(f"sign in (once, within 5 minutes): {url}", markup=False, soft_wrap=True)
    if workers == 1:
        guarded_serve(app, host=host, port=port, limits=limits, sock=sock)
        return
    from docbinder.container import build_binder

    binder.close()  # each process builds its own: no connection crosses the fork
    code = serve_workers(
        lambda: make_app(build_binder(settings, prepare=False)),
        host=host,
        port=port,
        limits=limits,
        workers=workers,
        sock=sock,
    )
    if code:
        raise typer.Exit(code)
