"""The api's resolver: API Gateway proxy events (REST payload 1.0 and HTTP API 2.0) to routes.

Why our own rather than Powertools' ``event_handler``: importing that package imports every resolver
it has (AppSync, Bedrock agents, VPC Lattice, asyncio...), and its validation imports pydantic; the
two cost the api more than the cold-start target leaves (docs/benchmarks.md, "Cold start"). This
resolver imports neither:

- **routes** are declared with their path (``/v1/jobs/<job_id>``), query and header parameters
  (:class:`Param`, checked here: integers with bounds, strings with lengths, enum members) and their
  body (:class:`Body`, a pydantic model of ``punctual_functions.api.requests`` named by string and imported by
  the first request that has a body to check, so a cold ``GET`` never loads pydantic);
- **bodies** are checked once, before routing (``guards.check_body``: size, media type, strict
  JSON, one object), and the parsed object goes to the route's model;
- **answers** are the route's JSON as built (``views.py``); the response models document it (the
  tests check every answer against its model, ``tests/integration/conftest.py``);
- **refusals** are ``ApiError``s (``errors.py``), answered as every refusal is; an unexpected error is
  logged and answered 500 without details;
- the OpenAPI document is built from the same declarations, on demand (``openapi.py``).

One request at a time per process, as Lambda serves them; nothing of a request is kept on the router.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from importlib import import_module
from typing import Any, Literal

from punctual_functions.api.errors import (
    ApiError,
    InternalError,
    InvalidInput,
    NotFound,
    Throttled,
    from_validation,
)
from punctual_functions.api.guards import check_body
from punctual_functions.core.aws_errors import throttling
from punctual_functions.core.observability import logger

MODELS = "punctual_functions.api.requests"
_PATH_PARAMETER = re.compile(r"<(\w+)>")


@dataclass(frozen=True)
class Param:
    """A query or header parameter: its name on the wire, the endpoint argument it fills and its checks.

    ``kind`` is ``int``, ``str`` or an ``Enum`` of strings; a missing parameter is ``default``."""

    name: str
    kind: type = str
    where: Literal["query", "header"] = "query"
    arg: str = ""
    default: Any = None
    ge: int | None = None
    le: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    description: str | None = None

    @property
    def argument(self) -> str:
        return self.arg or self.name.lower().replace("-", "_")

    def parse(self, raw: str) -> Any:
        """The value, or ``ValueError`` whose text says why (in pydantic's words, as bodies say it)."""
        if issubclass(self.kind, Enum):
            members = [member.value for member in self.kind]
            if raw not in members:
                named = [f"'{value}'" for value in members]
                raise ValueError(f"Input should be {', '.join(named[:-1])} or {named[-1]}")
            return self.kind(raw)
        if self.kind is int:
            if not re.fullmatch(r"\s*[+-]?\d+\s*", raw):
                raise ValueError("Input should be a valid integer, unable to parse string as an integer")
            number = int(raw)
            if self.ge is not None and number < self.ge:
                raise ValueError(f"Input should be greater than or equal to {self.ge}")
            if self.le is not None and number > self.le:
                raise ValueError(f"Input should be less than or equal to {self.le}")
            return number
        if self.min_length is not None and len(raw) < self.min_length:
            raise ValueError(f"String should have at least {_characters(self.min_length)}")
        if self.max_length is not None and len(raw) > self.max_length:
            raise ValueError(f"String should have at most {_characters(self.max_length)}")
        return raw


def _characters(count: int) -> str:
    return f"{count} character" if count == 1 else f"{count} characters"


@dataclass(frozen=True)
class Body:
    """A route's JSON body: the model (by name, in ``punctual_functions.api.requests``) and the argument
    it fills.
    An optional body may be left out (the argument is then None)."""

    model: str
    arg: str = "body"
    optional: bool = False

    def model_class(self) -> Any:
        return getattr(import_module(MODELS), self.model)


@dataclass(frozen=True)
class Answer:
    """What a route answers: a status and a JSON value, or text of another content type."""

    status: int
    body: Any
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)

    def text(self) -> str:
        if self.content_type == "application/json":
            return json.dumps(self.body, separators=(",", ":"))
        return str(self.body)


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # /v1/jobs/<job_id>
    endpoint: Callable[..., Any]
    params: tuple[Param, ...] = ()
    body: Body | None = None
    status: int = 200  # the success status, for the document
    answer: str | None = None  # the success model, for the document
    tags: tuple[str, ...] = ()
    in_schema: bool = True
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = [
            f"(?P<{match[1]}>[^/]+)" if (match := _PATH_PARAMETER.fullmatch(part)) else re.escape(part)
            for part in self.path.split("/")
        ]
        # Trailing slashes are the same route, as API Gateway's REST resolver has them.
        object.__setattr__(self, "pattern", re.compile("/".join(parts) + "/*"))

    @property
    def path_parameters(self) -> list[str]:
        return _PATH_PARAMETER.findall(self.path)

    @property
    def openapi_path(self) -> str:
        return _PATH_PARAMETER.sub(r"{\1}", self.path)


@dataclass
class Request:
    """One API Gateway proxy event, read the same way whatever its payload version."""

    event: dict[str, Any]

    @property
    def is_http_api(self) -> bool:
        return self.event.get("version") == "2.0"

    @property
    def method(self) -> str:
        if self.is_http_api:
            return str(self.event.get("requestContext", {}).get("http", {}).get("method", "")).upper()
        return str(self.event.get("httpMethod", "")).upper()

    @property
    def path(self) -> str:
        """The path within the API: an HTTP API's raw path less its stage (unless ``$default``); a REST
        API's ``path`` (without the stage)."""
        if self.is_http_api:
            raw = str(self.event.get("rawPath") or "/")
            stage = self.event.get("requestContext", {}).get("stage")
            if stage and stage != "$default" and (raw == f"/{stage}" or raw.startswith(f"/{stage}/")):
                return raw[len(stage) + 1 :] or "/"
            return raw
        return str(self.event.get("path") or "/")

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        for key, value in (self.event.get("headers") or {}).items():
            if key.lower() == wanted:
                return str(value)
        return None

    def query(self, name: str) -> str | None:
        """A query parameter; repeated, its last value (an HTTP API joins them with commas, as sent)."""
        if not self.is_http_api:
            values = (self.event.get("multiValueQueryStringParameters") or {}).get(name)
            if values:
                return str(values[-1])
        value = (self.event.get("queryStringParameters") or {}).get(name)
        return None if value is None else str(value)


Handler = Callable[[ApiError], Answer]


class Router:
    """The routes, and the resolution of an event to one of them."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(
        self,
        method: str,
        path: str,
        *,
        params: tuple[Param, ...] = (),
        body: Body | None = None,
        status: int = 200,
        answer: str | None = None,
        tags: tuple[str, ...] = (),
        in_schema: bool = True,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(endpoint: Callable[..., Any]) -> Callable[..., Any]:
            self.routes.append(
                Route(method.upper(), path, endpoint, params, body, status, answer, tags, in_schema)
            )
            return endpoint

        return register

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        for route in self.routes:
            found = route.pattern.fullmatch(path)
            if found and route.method == method:
                return route, found.groupdict()
        raise NotFound("no such route", "path")

    def resolve(self, event: dict[str, Any]) -> dict[str, Any]:
        """The proxy result of the event: the route's answer, or the refusal."""
        request = Request(event)
        try:
            body = check_body(event)  # size, media type, strict JSON: refused before routing
            route, path_values = self.match(request.method, request.path)
            answer = route.endpoint(request, **path_values, **_arguments(route, request, body))
        except ApiError as refused:
            answer = refusal(refused)
        except Exception as error:
            if throttling(error):
                # More than the table takes at once (one owner's index partition: docs/scale.md). A
                # write the request had made stands (each is whole, and a retry with the same
                # Idempotency-Key answers as the first time); the client retries after a second.
                logger.warning("throttled", extra={"path": request.path, "error": str(error)})
                slow_down = Throttled("too many requests at once for the table; retry after a second")
                answer = Answer(429, slow_down.body(), headers={"Retry-After": "1"})
            else:
                # A bug must not leak details; it is logged with the request for whoever runs the
                # service.
                logger.exception("unhandled error", extra={"path": request.path})
                answer = refusal(InternalError("an unexpected error occurred; it has been logged"))
        if not isinstance(answer, Answer):
            answer = Answer(200, answer)
        return proxy_result(answer, http_api=request.is_http_api)


def refusal(error: ApiError) -> Answer:
    return Answer(error.status_code, error.body())


def proxy_result(answer: Answer, *, http_api: bool) -> dict[str, Any]:
    """The Lambda proxy result: a REST API reads ``multiValueHeaders``, an HTTP API ``headers``."""
    headers = {"Content-Type": answer.content_type, **answer.headers}
    result: dict[str, Any] = {"statusCode": answer.status, "body": answer.text(), "isBase64Encoded": False}
    if http_api:
        result["headers"] = headers
    else:
        result["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
    return result


def _arguments(route: Route, request: Request, body: dict[str, Any] | None) -> dict[str, Any]:
    """The endpoint's arguments from the query, the headers and the body, or the refusal naming every
    parameter refused (the first as ``field``), as a body's refusal does."""
    arguments: dict[str, Any] = {}
    problems: list[dict[str, str]] = []
    for param in route.params:
        raw = request.query(param.name) if param.where == "query" else request.header(param.name)
        if raw is None:
            arguments[param.argument] = param.default
            continue
        try:
            arguments[param.argument] = param.parse(raw)
        except ValueError as error:
            problems.append({"field": param.name, "reason": str(error)})
    if problems:
        raise InvalidInput(problems[0]["reason"], problems[0]["field"], problems=problems)
    if route.body is not None:
        arguments[route.body.arg] = _body(route.body, body)
    return arguments


def _body(body: Body, value: dict[str, Any] | None) -> Any:
    if value is None:
        if body.optional:
            return None
        raise InvalidInput("Field required", "body", problems=[{"field": "body", "reason": "Field required"}])
    from pydantic import ValidationError  # with the models: only a request with a body loads it

    try:
        return body.model_class().model_validate(value)
    except ValidationError as error:
        raise from_validation([dict(problem) for problem in error.errors()]) from error
