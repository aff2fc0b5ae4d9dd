"""The ``punctual`` command line."""

from __future__ import annotations

import os
import signal
import sys

import click

from punctual.local.env import DEFAULT_TOKEN, parse_tokens


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


@click.group()
@click.version_option(package_name="punctual")
def main() -> None:
    """Punctual: jobs that fire at their second."""


@main.command()
@click.option(
    "--port", type=int, default=lambda: int(os.environ.get("PUNCTUAL_PORT", "8000")), show_default="8000"
)
@click.option("--workers", type=int, default=1, show_default=True, help="Worker processes polling SQS.")
@click.option(
    "--aws-endpoint",
    default=None,
    help="Use this emulator (moto server, LocalStack) instead of an embedded one.",
)
@click.option(
    "--role", type=click.Choice(["api", "dispatcher", "worker"]), default=None, help="Run one role alone."
)
@click.option("--tick-seconds", type=float, default=60.0, show_default=True, help="Dispatcher tick interval.")
@click.option("--shards", type=int, default=4, show_default=True, help="Trigger shards.")
@click.option("--lookahead-seconds", type=int, default=120, show_default=True)
def local(
    port: int,
    workers: int,
    aws_endpoint: str | None,
    role: str | None,
    tick_seconds: float,
    shards: int,
    lookahead_seconds: int,
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
        settings = provision(local_settings(aws_endpoint, overrides=overrides))
        os.environ.update(settings.to_env())
        role_main([role, "--port", str(port), "--tick-seconds", str(tick_seconds)])
        return
    try:
        tokens = parse_tokens(os.environ.get("PUNCTUAL_TOKENS"))
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    # `kill` and service managers stop with SIGTERM: shut down as cleanly as on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    stack = LocalStack(
        port=port,
        workers=workers,
        aws_endpoint=aws_endpoint,
        tick_seconds=tick_seconds,
        settings_overrides=overrides,
    )
    try:
        settings = stack.start()
        token = next(iter(tokens)) if os.environ.get("PUNCTUAL_TOKENS") else DEFAULT_TOKEN
        click.echo(
            "\n".join(
                [
                    "",
                    f"  Punctual is running at http://127.0.0.1:{port}",
                    f"  token:      {token}   (Authorization: Bearer {token})",
                    f"  health:     http://127.0.0.1:{port}/v1/health",
                    f"  emulator:   {settings.aws_endpoint_url}  (table {settings.table_name})",
                    f"  dispatcher: every {tick_seconds:g}s, look-ahead {settings.lookahead_seconds}s;"
                    f" workers: {workers}",
                    "  Ctrl-C stops everything.",
                    "",
                ]
            ),
            err=True,
        )
        stack.supervise()
    except KeyboardInterrupt:
        click.echo("\npunctual: stopping", err=True)
    finally:
        stack.stop()
    sys.exit(0)
