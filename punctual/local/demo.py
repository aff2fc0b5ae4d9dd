"""``punctual local --demo``: a webhook receiver, a handful of jobs, and each delivery as it lands."""

from __future__ import annotations

import queue
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

import click

from punctual.client import Client, Config
from punctual.local.httpserver import LocalHTTPServer
from punctual.local.supervisor import LocalStack


def _receiver(deliveries: queue.Queue[tuple[float, str, dict[str, str]]]) -> LocalHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            arrived = time.time()
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            deliveries.put((arrived, self.path, dict(self.headers.items())))
            self.send_response(204)
            self.end_headers()

    server = LocalHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="demo-receiver", daemon=True).start()
    return server


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def run_demo(base_url: str, token: str, stack: LocalStack) -> None:
    deliveries: queue.Queue[tuple[float, str, dict[str, str]]] = queue.Queue()
    server = _receiver(deliveries)
    hook = f"http://127.0.0.1:{server.server_address[1]}"
    client = Client(Config(endpoint=base_url, token=token, auth="bearer"))
    now = datetime.now(UTC).replace(microsecond=0)
    plans: list[tuple[str, dict[str, Any]]] = [
        (f"demo-once-{s}s", {"at": _iso(now + timedelta(seconds=s))}) for s in (5, 12, 30, 75, 150)
    ]
    plans += [("demo-every-10s", {"cron": "*/10 * * * * *"}), ("demo-every-minute", {"cron": "* * * * *"})]
    click.echo(
        "  demo: scheduling jobs (one-offs in 5s, 12s, 30s, 75s, 150s; a 10-second and a 1-minute cron)"
    )
    for name, schedule in plans:
        client.create_job(
            {
                "name": f"{name}-{now.strftime('%H%M%S')}",
                "schedule": schedule,
                "target": {"type": "http", "url": f"{hook}/{name}"},
                "payload": {"demo": name},
            }
        )
    click.echo("  demo: deliveries appear below as they arrive (Ctrl-C to stop)\n")
    click.echo(f"  {'arrived (UTC)':<14}{'job':<22}{'scheduled for':<26}{'lateness':>10}")
    while True:
        stack.check()
        try:
            arrived, path, headers = deliveries.get(timeout=0.5)
        except queue.Empty:
            continue
        scheduled = datetime.fromisoformat(headers.get("Punctual-Scheduled-For", "").replace("Z", "+00:00"))
        lateness_ms = (arrived - scheduled.timestamp()) * 1000
        stamp = datetime.fromtimestamp(arrived, UTC).strftime("%H:%M:%S.%f")[:-3]
        click.echo(f"  {stamp:<14}{path.strip('/'):<22}{_iso(scheduled):<26}{lateness_ms:>8.1f} ms")
