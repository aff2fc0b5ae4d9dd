"""The root ``punctual`` group and what every command group shares.

``main`` (the root group), ``Context`` and ``api_command`` (--endpoint/--token/--api-key/--role-arn/--json,
the client, API errors → one line and an exit code), the exit codes, and option helpers: relative times
(``parse_when``, ``remembered_time``), KEY=VALUE pairs, --payload, and following pages.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import click

from punctual.client import CONFIG_PATH, ApiError, Client, Config, ConfigError, ConnectionFailed

F = TypeVar("F", bound=Callable[..., Any])

EXIT_REFUSED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_UNAVAILABLE = 1, 2, 3, 4, 5

_RELATIVE = re.compile(r"^in\s+(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?)$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_when(text: str, now: datetime | None = None) -> str:
    """``"in 30s"`` / ``"in 5 minutes"`` → an ISO time; anything else goes to the API as written."""
    match = _RELATIVE.match(text.strip())
    if not match:
        return text
    amount, unit = int(match.group(1)), match.group(2)[0].lower()
    moment = (now or datetime.now(UTC)) + timedelta(**{_UNITS[unit]: amount})
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Context:
    def __init__(
        self,
        endpoint: str | None,
        token: str | None,
        as_json: bool,
        api_key: str | None = None,
        role_arn: str | None = None,
    ) -> None:
        self.config = Config.load(endpoint, token, api_key=api_key, role_arn=role_arn)
        self.client = Client(self.config)
        self.as_json = as_json


api_key_option = click.option(
    "--api-key",
    envvar="PUNCTUAL_API_KEY",
    help="API key (a deployment with api_auth=api_key), sent as x-api-key.",
)
role_arn_option = click.option(
    "--role-arn",
    envvar="PUNCTUAL_ROLE_ARN",
    help="Sign as this IAM role (SigV4), assumed with your AWS credentials: act on the jobs it owns.",
)


def api_command(function: F) -> F:
    """Adds --endpoint/--token/--api-key/--role-arn/--json, builds the client, and turns API errors into
    one line + exit code."""

    @click.option("--endpoint", envvar="PUNCTUAL_ENDPOINT", help="API URL (default: the local stack).")
    @click.option("--token", envvar="PUNCTUAL_TOKEN", help="Bearer token (local stack).")
    @api_key_option
    @role_arn_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
    @functools.wraps(function)
    def wrapper(
        endpoint: str | None,
        token: str | None,
        api_key: str | None,
        role_arn: str | None,
        as_json: bool,
        **kwargs: Any,
    ) -> Any:
        try:
            ctx = Context(endpoint, token, as_json, api_key, role_arn)
        except ConfigError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_USAGE)
        try:
            return function(ctx, **kwargs)
        except ApiError as error:
            click.echo(f"error: {error}", err=True)
            code = {404: EXIT_NOT_FOUND, 409: EXIT_CONFLICT}.get(error.status, EXIT_REFUSED)
            sys.exit(EXIT_UNAVAILABLE if error.status >= 500 else code)
        except ConnectionFailed as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_UNAVAILABLE)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(package_name="punctual")
def main() -> None:
    """Punctual: jobs that fire at their second.

    Talks to the local stack by default (http://127.0.0.1:8000, token local-dev-token); set
    PUNCTUAL_ENDPOINT or run `punctual config from-stack` for a deployed one.
    """


def choice(enum: type[StrEnum], *only: StrEnum) -> click.Choice[str]:
    """An option taking an enum's values (the domain's, ``punctual_functions.core.model``: one source for the
    API and the CLI), or only some of them."""
    return click.Choice([member.value for member in (only or tuple(enum))])


def key_values(pairs: tuple[str, ...], separator: str, option: str) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition(separator)
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY{separator}VALUE", param_hint=option)
        result[key.strip()] = value.strip()
    return result


def collect(fetch: Callable[[str | None], Any], everything: bool) -> tuple[list[Any], str | None]:
    """A listing's items from its first page (``fetch(None)``), or from every page when ``everything``,
    and the cursor of the page after them (None at the end)."""
    items: list[Any] = []
    cursor = None
    while True:
        page = fetch(cursor)
        items.extend(page["items"])
        cursor = page.get("next_cursor")
        if not everything or not cursor:
            return items, cursor


def read_payload(raw: str | None) -> Any:
    """--payload: JSON, or @file.json holding it."""
    if raw is None:
        return None
    try:
        text = Path(raw[1:]).read_text() if raw.startswith("@") else raw
    except OSError as error:
        raise click.BadParameter(
            f"cannot read {raw[1:]}: {error.strerror}", param_hint="--payload"
        ) from error
    try:
        return json.loads(text)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="--payload") from error


def remembered_time(endpoint: str, key: str, resolved: str) -> str:
    """The time a relative --at resolved to the first time this Idempotency-Key was used (24 h)."""
    path = CONFIG_PATH.parent / "idempotency.json"
    try:
        memory: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        memory = {}
    now = time.time()
    memory = {k: v for k, v in memory.items() if isinstance(v, dict) and now - v.get("saved", 0) < 86400}
    entry = memory.setdefault(f"{endpoint}|{key}", {"at": resolved, "saved": now})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(memory))
    except OSError:
        pass  # without a place to remember, a retry is refused by the API, which says why
    return str(entry["at"])
