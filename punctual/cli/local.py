"""``punctual local``: the whole stack on this machine (embedded emulator), or one role of it."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import click

from punctual.cli.common import EXIT_UNAVAILABLE, EXIT_USAGE, main
from punctual.local.env import DEFAULT_TOKEN, parse_tokens


def _require_free_port(port: int) -> None:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            click.echo(f"error: port {port} is in use; choose another with --port or PUNCTUAL_PORT", err=True)
            sys.exit(EXIT_USAGE)


def _provision_or_exit(provision: Callable[..., Any], settings: Any) -> Any:
    """Create the table and queues in the emulator, or say in one line why it cannot be reached."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return provision(settings, rights=_rights())
    except (BotoCoreError, ClientError) as error:
        click.echo(f"error: cannot use the AWS endpoint {settings.aws_endpoint_url}: {error}", err=True)
        sys.exit(EXIT_UNAVAILABLE)


def _rights() -> Any:
    """The delivery rights ``PUNCTUAL_DELIVERY_RIGHTS`` gives, or a usage error naming what is wrong."""
    from punctual.local.env import parse_rights

    try:
        return parse_rights(os.environ.get("PUNCTUAL_DELIVERY_RIGHTS"))
    except ValueError as error:
        raise click.UsageError(str(error)) from error


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def default_workers() -> int:
    """One worker process per core, at most four. On AWS every invocation has an execution environment
    of its own; here a process's invocations share its one interpreter lock, and the calls due at one
    second queue for it (docs/benchmarks.md, "Jobs created shortly before they fall due"). A process
    beyond the machine's cores adds no CPU."""
    return max(1, min(4, os.cpu_count() or 1))


@main.command()
@click.option(
    "--port", type=int, default=lambda: int(os.environ.get("PUNCTUAL_PORT", "8000")), show_default="8000"
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=default_workers,
    show_default="the machine's cores, at most 4",
    help="Worker processes (each an SQS event source; together they take the deployment's 50 invocations).",
)
@click.option(
    "--aws-endpoint",
    default=None,
    help="Use this emulator (moto server, LocalStack) instead of an embedded one.",
)
@click.option(
    "--role", type=click.Choice(["api", "dispatcher", "worker"]), default=None, help="Run one role alone."
)
@click.option("--tick-seconds", type=float, default=60.0, show_default=True, help="Dispatcher tick interval.")
@click.option("--shards", type=click.IntRange(1, 1000), default=4, show_default=True, help="Trigger shards.")
@click.option("--lookahead-seconds", type=click.IntRange(60, 840), default=120, show_default=True)
@click.option(
    "--demo", is_flag=True, help="Also start a webhook receiver, schedule a few jobs and show deliveries."
)
def local(
    port: int,
    workers: int,
    aws_endpoint: str | None,
    role: str | None,
    tick_seconds: float,
    shards: int,
    lookahead_seconds: int,
    demo: bool,
) -> None:
    """Run the whole stack locally on an embedded AWS emulator."""
    from punctual.local.supervisor import LocalStack

    overrides: dict[str, object] = {"shard_count": shards, "lookahead_seconds": lookahead_seconds}
    if role is not None:
        if aws_endpoint is None:
            raise click.UsageError("--role needs --aws-endpoint (the emulator the other roles use)")
        from punctual.local.env import LOCAL_CREDENTIALS, local_settings
        from punctual.local.provision import provision
        from punctual.local.role import main as role_main

        for key, value in LOCAL_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        if role == "api":
            _require_free_port(port)
        settings = _provision_or_exit(provision, local_settings(aws_endpoint, overrides=overrides))
        os.environ.update(settings.to_env())
        where = f" on http://127.0.0.1:{port}" if role == "api" else ""
        detail = f", every {tick_seconds:g}s" if role == "dispatcher" else ""
        click.echo(
            f"  punctual {role}{where}{detail}, against {aws_endpoint}"
            f" (table {settings.table_name}); Ctrl-C stops it",
            err=True,
        )
        # Ctrl-C stops it even when it was started with SIGINT ignored (a shell's background job, a test
        # runner's worker process: the child inherits the ignoring), as the whole stack does.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        role_main([role, "--port", str(port), "--tick-seconds", str(tick_seconds)])
        return
    try:
        tokens = parse_tokens(os.environ.get("PUNCTUAL_TOKENS"))
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    rights = _rights()
    _require_free_port(port)
    if aws_endpoint is not None:
        from punctual.local.env import local_settings
        from punctual.local.provision import provision

        _provision_or_exit(provision, local_settings(aws_endpoint, overrides=overrides))
    # `kill` and service managers stop with SIGTERM: shut down as cleanly as on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # even when started in the background with SIGINT ignored
    stack = LocalStack(
        port=port,
        workers=workers,
        aws_endpoint=aws_endpoint,
        tick_seconds=tick_seconds,
        settings_overrides=overrides,
        rights=rights,
    )
    try:
        settings = stack.start()
        token = next(iter(tokens)) if os.environ.get("PUNCTUAL_TOKENS") else DEFAULT_TOKEN
        base = f"http://127.0.0.1:{port}"
        click.echo(
            "\n".join(
                [
                    "",
                    f"  Punctual is running at {base}",
                    f"  token:      {token}   (Authorization: Bearer {token})",
                    f"  console:    {base}/console   (the web console; sign in with the token)",
                    f"  API docs:   {base}/docs   (OpenAPI: {base}/openapi.json)",
                    f"  emulator:   {settings.aws_endpoint_url}  (table {settings.table_name})",
                    f"  dispatcher: every {tick_seconds:g}s, look-ahead {settings.lookahead_seconds}s;"
                    f" workers: {workers}",
                    "  try:       punctual jobs create --at 'in 10s' --url http://127.0.0.1:"
                    f"{port}/v1/health --method GET",
                    "  Ctrl-C stops everything.",
                    "",
                ]
            ),
            err=True,
        )
        if demo:
            from punctual.local.demo import run_demo

            run_demo(base, token, stack)
        else:
            stack.supervise()
    except KeyboardInterrupt:
        click.echo("\npunctual: stopping", err=True)
    finally:
        stack.stop()
    sys.exit(0)
