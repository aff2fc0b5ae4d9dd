"""The embedded AWS emulator: moto's server, with DynamoDB made as atomic as the real service.

moto applies a conditional write or a transaction in several Python steps, so two concurrent requests
can both pass the same condition (seen here: two dispatchers both claiming one trigger). DynamoDB
serialises them. This WSGI middleware runs DynamoDB requests one at a time; SQS requests pass
through untouched, so a 20-second long poll never blocks the table.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class SerializedDynamoDB:
    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with self.lock:
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


def make_emulator(host: str, port: int) -> BaseWSGIServer:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = SerializedDynamoDB(DomainDispatcherApplication(create_backend_app))
    return make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)


class EmulatorThread:
    """The emulator in a thread of this process (tests)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = make_emulator(host, port)
        self.thread = threading.Thread(target=self.server.serve_forever, name="emulator", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> EmulatorThread:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="punctual-emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        make_emulator(args.host, args.port).serve_forever()


if __name__ == "__main__":
    main()
