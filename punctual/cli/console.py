"""``punctual console``: the web console on this machine, for any API the CLI can reach (docs/console.md)."""

from __future__ import annotations

import sys
import webbrowser

import click

from punctual.cli.common import EXIT_UNAVAILABLE, EXIT_USAGE, api_key_option, main, role_arn_option
from punctual.client import Config, ConfigError, ConnectionFailed


@main.command("console")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8001, show_default=True, help="0: any free port."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the console in a browser.")
@click.option("--endpoint", envvar="PUNCTUAL_ENDPOINT", help="API URL (default: as the other commands).")
@click.option("--token", envvar="PUNCTUAL_TOKEN", help="Bearer token (local stack).")
@api_key_option
@role_arn_option
def console(
    port: int,
    open_browser: bool,
    endpoint: str | None,
    token: str | None,
    api_key: str | None,
    role_arn: str | None,
) -> None:
    """Serve the web console on 127.0.0.1, forwarding its API calls to the configured endpoint.

    Calls are authenticated here (SigV4 with your AWS credentials, or as --role-arn, or the API key for
    a deployed API, or the bearer token), so no credential reaches the browser. Ctrl-C stops it.
    """
    from punctual.console.server import start_console

    try:
        config = Config.load(endpoint, token, api_key=api_key, role_arn=role_arn)
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        server = start_console(config, port)
    except ConnectionFailed as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    except OSError as error:
        click.echo(f"error: cannot listen on 127.0.0.1:{port}: {error.strerror}; choose --port", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"  Punctual console: {server.url}", err=True)
    click.echo(f"  forwarding /v1 to {server.forwarder.description}; Ctrl-C stops it.", err=True)
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("\npunctual console: stopping", err=True)
    finally:
        server.server.server_close()
