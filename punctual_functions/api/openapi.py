"""The API's description of itself: the OpenAPI document and Swagger UI, as each deployment serves them.

Imported only when ``/openapi.json`` or ``/docs`` is asked for: the document is built from the
router's routes (``routing.py``) and the models' JSON Schemas, and no other route needs it.

- **servers**: where this very request came in, with its stage (``https://<id>.execute-api.<region>.
  amazonaws.com/prod``), so a generated client calls the right base URL; locally ``/``.
- **security**: how this deployment authenticates callers (``Settings.api_auth``): SigV4, an API key,
  or the local stack's bearer tokens; health, the document and the docs need none.
- **/docs**: a small page that loads Swagger UI's script and style from ``/docs/<asset>`` (served from
  Powertools' copy, cacheable) and the document from ``/openapi.json``.
"""

from __future__ import annotations

import inspect
import re
from enum import Enum
from importlib import resources
from typing import Any, Final

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from punctual_functions.api import responses
from punctual_functions.api.routing import Param, Request, Route, Router

__all__ = ["SWAGGER_ASSETS", "add_links", "base_path", "openapi_document", "swagger_asset", "swagger_page"]

TITLE: Final = "Punctual"
VERSION: Final = "0.1.0"
DESCRIPTION: Final = "Schedule one-off and recurring jobs that fire at their second."

# Per Settings.api_auth: (scheme name, OpenAPI security scheme, how to call).
SECURITY_SCHEMES: Final[dict[str, tuple[str, dict[str, Any], str]]] = {
    "iam": (
        "sigv4",
        {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "x-amazon-apigateway-authtype": "awsSigv4",
            "description": "AWS Signature Version 4 for the service `execute-api`, with the caller's "
            "IAM credentials; the caller's IAM principal owns the jobs it creates.",
        },
        "Sign every request with AWS SigV4 (service `execute-api`).",
    ),
    "api_key": (
        "api_key",
        {
            "type": "apiKey",
            "name": "x-api-key",
            "in": "header",
            "description": "An API key of the deployment's usage plan; the key's id owns the jobs.",
        },
        "Send an API key of the deployment in the `x-api-key` header.",
    ),
    "bearer": (
        "bearer",
        {"type": "http", "scheme": "bearer", "description": "A token of `PUNCTUAL_TOKENS` (local stack)."},
        "Send `Authorization: Bearer <token>` (the local stack prints its development token).",
    ),
}

# Paths anyone may read: liveness and the API's own description.
PUBLIC_OPERATIONS: Final = (("/v1/health", "get"),)

SWAGGER_ASSETS: Final = {
    "swagger-ui-bundle.min.js": "text/javascript; charset=utf-8",
    "swagger-ui.min.css": "text/css; charset=utf-8",
}


def base_path(request: Request) -> str:
    """The part of the URL before the API's own paths: ``/prod`` on the execute-api domain, a custom
    domain's base path mapping, or nothing (an HTTP API's ``$default`` stage, a custom domain at its
    root, the local stack)."""
    event = request.event
    if request.is_http_api:
        outer = str(event.get("rawPath") or "")
    else:
        outer = str((event.get("requestContext") or {}).get("path") or "")
    inner = request.path
    if inner and outer.endswith(inner):
        return outer[: len(outer) - len(inner)].rstrip("/")
    return ""


def server_url(request: Request) -> str:
    """The base URL this request came in on (API Gateway's domain and stage), or ``/`` locally."""
    domain = (request.event.get("requestContext") or {}).get("domainName")
    prefix = base_path(request)
    if domain:
        return f"https://{domain}{prefix}"
    return prefix or "/"


# The answers every /v1 route may give besides its success.
ERRORS: Final = {
    400: "Malformed request",
    401: "Missing or bad credentials",
    403: "Not yours to do: the owner has no delivery right to the target the body names",
    404: "No such job, run or calendar (or not yours)",
    409: "Conflicts with the state of the job, run or calendar",
    413: "Body larger than 64 KiB",
    422: "Invalid input: the body names the field and the reason",
}
REF: Final = "#/components/schemas/{model}"
STATUS_TEXT: Final = {201: "Created", 202: "Accepted"}


def openapi_document(router: Router, request: Request, api_auth: str) -> dict[str, Any]:
    """The document of the router's routes, with this deployment's servers, security and the links
    between operations. Bodies are described by their models' JSON Schemas (pydantic), request bodies
    as validated and answers as serialized."""
    name, scheme, how = SECURITY_SCHEMES[api_auth]
    routes = [route for route in router.routes if route.in_schema]
    used: dict[tuple[str, JsonSchemaMode], type[BaseModel]] = {
        ("ErrorOut", "serialization"): responses.ErrorOut
    }
    for route in routes:
        if route.body is not None:
            used[(route.body.model, "validation")] = route.body.model_class()
        if route.answer is not None:
            used[(route.answer, "serialization")] = getattr(responses, route.answer)
    _, definitions = models_json_schema(
        [(model, mode) for (_, mode), model in used.items()], ref_template=REF
    )
    schemas: dict[str, Any] = dict(definitions.get("$defs", {}))
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        operation = _operation(route, schemas)
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = operation
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": VERSION, "description": f"{DESCRIPTION} {how}"},
        "servers": [{"url": server_url(request)}],
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items())), "securitySchemes": {name: scheme}},
        "security": [{name: []}],
    }
    for path, method in PUBLIC_OPERATIONS:
        document["paths"][path][method]["security"] = []
    add_links(document)
    return document


def _operation(route: Route, schemas: dict[str, Any]) -> dict[str, Any]:
    doc = inspect.getdoc(route.endpoint)
    operation: dict[str, Any] = {
        "tags": list(route.tags),
        "summary": f"{route.method} {route.openapi_path}",
        "operationId": operation_id(route),
    }
    if doc:
        operation["description"] = doc
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route.path_parameters
    ]
    parameters += [_parameter(param, schemas) for param in route.params]
    if parameters:
        operation["parameters"] = parameters
    if route.body is not None:
        body = {"$ref": REF.format(model=route.body.model)}
        operation["requestBody"] = {
            "content": {"application/json": {"schema": body}},
            "required": not route.body.optional,
        }
    answer: dict[str, Any] = {"description": STATUS_TEXT.get(route.status, "OK")}
    if route.answer is not None:
        answer["content"] = {"application/json": {"schema": {"$ref": REF.format(model=route.answer)}}}
    responses: dict[str, Any] = {str(route.status): answer}
    if route.path.startswith("/v1/") and route.path != "/v1/health":
        error = {"application/json": {"schema": {"$ref": REF.format(model="ErrorOut")}}}
        responses.update(
            {str(status): {"description": text, "content": error} for status, text in ERRORS.items()}
        )
    operation["responses"] = responses
    return operation


def _parameter(param: Param, schemas: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any]
    if issubclass(param.kind, Enum):
        schemas[param.kind.__name__] = {
            "type": "string",
            "enum": [member.value for member in param.kind],
            "title": param.kind.__name__,
        }
        if param.kind.__doc__ and "__doc__" in vars(param.kind):
            schemas[param.kind.__name__]["description"] = inspect.cleandoc(param.kind.__doc__)
        schema = {"$ref": REF.format(model=param.kind.__name__)}
    elif param.kind is int:
        schema = {"type": "integer"}
        schema.update(
            {key: value for key, value in (("minimum", param.ge), ("maximum", param.le)) if value is not None}
        )
    else:
        schema = {"type": "string"}
        lengths = (("minLength", param.min_length), ("maxLength", param.max_length))
        schema.update({key: value for key, value in lengths if value is not None})
    if param.default is not None:
        schema = {**schema, "default": param.default}
    described: dict[str, Any] = {"name": param.name, "in": param.where, "required": False, "schema": schema}
    if param.description:
        described["description"] = param.description
    return described


def operation_id(route: Route) -> str:
    """``list_jobs_v1_jobs_get``: the endpoint's name, its path and method (FastAPI's and Powertools'
    form, so generated clients keep their method names)."""
    return re.sub(r"\W", "_", f"{route.endpoint.__name__}{route.openapi_path}") + f"_{route.method.lower()}"


def swagger_page(request: Request) -> str:
    """Swagger UI: a few hundred bytes that load the UI's assets and the document by URL."""
    prefix = base_path(request)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{TITLE} API</title>
<link rel="stylesheet" href="{prefix}/docs/swagger-ui.min.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{prefix}/docs/swagger-ui-bundle.min.js"></script>
<script>SwaggerUIBundle({{url: "{prefix}/openapi.json", dom_id: "#swagger-ui", deepLinking: true}});</script>
</body>
</html>
"""


def swagger_asset(name: str) -> tuple[str, str] | None:
    """(content type, text) of one of Swagger UI's assets, from Powertools' copy; None if unknown."""
    content_type = SWAGGER_ASSETS.get(name)
    if content_type is None:
        return None
    package = resources.files("aws_lambda_powertools.event_handler.openapi.swagger_ui")
    return content_type, package.joinpath(name).read_text(encoding="utf-8")


# OpenAPI links: which answer's ids feed which operation, so a client (and schemathesis's stateful
# phase) can chain calls with real ids: create a job, read, change, pause, resume, run and cancel it,
# then read and cancel the run it started; create a calendar, read, replace, list its days, delete
# it. Every answer carrying a job (JobOut) leads to the job's other operations; every answer carrying
# a run (RunOut) to the run's and to its job. Lists have no links: `items/0` of an empty page does
# not resolve.
_JOB = "/v1/jobs/{job_id}"
_RUN = "/v1/jobs/{job_id}/runs/{run_id}"
JOB_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetJob": ("get", _JOB),
    "ChangeJob": ("patch", _JOB),
    "CancelJob": ("delete", _JOB),
    "PauseJob": ("post", _JOB + "/pause"),
    "ResumeJob": ("post", _JOB + "/resume"),
    "RunJobNow": ("post", _JOB + "/run"),
    "ListRuns": ("get", _JOB + "/runs"),
    "ListChanges": ("get", _JOB + "/changes"),
}
RUN_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetRun": ("get", _RUN),
    "CancelRun": ("post", _RUN + "/cancel"),
}
# The answers that carry a job, and those that carry a run: (method, path, status).
JOB_ANSWERS = [
    ("post", "/v1/jobs", "201"),
    ("get", _JOB, "200"),
    ("patch", _JOB, "200"),
    ("delete", _JOB, "200"),
    ("post", _JOB + "/pause", "200"),
    ("post", _JOB + "/resume", "200"),
    ("post", _JOB + "/restore", "200"),
]
RUN_ANSWERS = [("post", _JOB + "/run", "202"), ("get", _RUN, "200"), ("post", _RUN + "/cancel", "200")]
# A calendar's answers lead to its other operations by its name (a deleted one's would answer 404).
_CALENDAR = "/v1/calendars/{name}"
CALENDAR_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetCalendar": ("get", _CALENDAR),
    "ReplaceCalendar": ("put", _CALENDAR),
    "DeleteCalendar": ("delete", _CALENDAR),
    "CalendarDays": ("get", _CALENDAR + "/days"),
}
CALENDAR_ANSWERS = [("post", "/v1/calendars", "201"), ("get", _CALENDAR, "200"), ("put", _CALENDAR, "200")]

# A target limit's answers lead to its other operations, by its name.
_LIMIT = "/v1/limits/{name}"
LIMIT_OPERATIONS: dict[str, tuple[str, str]] = {
    "GetLimit": ("get", _LIMIT),
    "ReplaceLimit": ("put", _LIMIT),
    "DeleteLimit": ("delete", _LIMIT),
}
LIMIT_ANSWERS = [("post", "/v1/limits", "201"), ("get", _LIMIT, "200"), ("put", _LIMIT, "200")]


def add_links(document: dict[str, Any]) -> None:
    """Adds the ``links`` of every answer that carries a job or a run, naming targets by operationId."""
    paths = document["paths"]

    def link(target: tuple[str, str], parameters: dict[str, str]) -> dict[str, Any]:
        method, path = target
        names = {p["name"] for p in paths[path][method].get("parameters", []) if p["in"] == "path"}
        return {
            "operationId": paths[path][method]["operationId"],
            "parameters": {f"path.{name}": parameters[name] for name in sorted(names)},
        }

    job = {"job_id": "$response.body#/job_id"}
    run = {**job, "run_id": "$response.body#/run_id"}
    limit = {"name": "$response.body#/name"}
    for answers, targets, ids in (
        (JOB_ANSWERS, JOB_OPERATIONS, job),
        (RUN_ANSWERS, {**RUN_OPERATIONS, "GetJob": JOB_OPERATIONS["GetJob"]}, run),
        (CALENDAR_ANSWERS, CALENDAR_OPERATIONS, {"name": "$response.body#/name"}),
        (LIMIT_ANSWERS, LIMIT_OPERATIONS, limit),
    ):
        for method, path, status in answers:
            response = paths[path][method]["responses"][status]
            response["links"] = {
                name: link(target, ids) for name, target in targets.items() if target != (method, path)
            }
