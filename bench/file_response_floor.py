"""The floor of the download benchmark: Starlette's own ``FileResponse`` of files in a directory.

``python bench/file_response_floor.py DIR PORT`` serves ``GET /f/<name>`` from ``DIR`` on
127.0.0.1:PORT with uvicorn's h11 protocol, as ``docbinder serve`` is served.
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Route

ROOT = Path(sys.argv[1])


async def send(request: Request) -> FileResponse:
    return FileResponse(ROOT / Path(request.path_params["name"]).name)


app = Starlette(routes=[Route("/f/{name}", send)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), http="h11", log_level="warning")
