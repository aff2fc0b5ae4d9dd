"""Starts the real local stack (``punctual local``) once for the end-to-end tests."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from punctual.local.env import LOCAL_CREDENTIALS
from punctual.testing.stack import local_stack as run_local_stack

TOKEN = "local-dev-token"


@dataclass
class Api:
    base_url: str
    state_dir: Path
    token: str = TOKEN

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {token or self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    state = tmp_path_factory.mktemp("stack")
    with run_local_stack(state) as stack:
        yield Api(stack.base_url, stack.state_dir)


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.2) -> Any:
    """Poll ``predicate`` until it returns something truthy or ``timeout`` passes; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    return predicate()


def emulator_endpoint(api: Api) -> str:
    """The emulator's URL, as ``punctual local`` prints it at start-up (punctual/testing/stack.py's log)."""
    log = api.state_dir.parent / "stack.log"
    # The banner follows the API's first answer by a moment.
    found = wait_until(lambda: re.search(r"emulator:\s+(http://\S+)", log.read_text(errors="replace")), 10)
    assert found, log.read_text(errors="replace")[-2000:]
    return str(found.group(1))


def emulator_client(api: Api, service: str, region: str = "us-east-1") -> Any:
    """A boto3 client of the stack's emulator, as a user's own code on AWS would hold."""
    return boto3.client(  # type: ignore[call-overload]
        service,
        region_name=region,
        endpoint_url=emulator_endpoint(api),
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=LOCAL_CREDENTIALS["AWS_SESSION_TOKEN"],
    )
