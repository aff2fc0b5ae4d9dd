"""The API's description of itself: the OpenAPI document and Swagger UI, as each deployment serves them.

Imported only when ``/openapi.json`` or ``/docs`` is asked for: Powertools' OpenAPI models are a large
share of a cold start, and no other route needs them.

- **servers**: where this very request came in, with its stage (``https://<id>.execute-api.<region>.
  amazonaws.com/prod``), so a generated client calls the right base URL; locally ``/``.
- **security**: how this deployment authenticates callers (``Settings.api_auth``): SigV4, an API key,
  or the local stack's bearer tokens; health, the document and the docs need none.
- **/docs**: a small page that loads Swagger UI's script and style from ``/docs/<asset>`` (served from
  Powertools' copy, cacheable) and the document from ``/openapi.json``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Final

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

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


def base_path(event: BaseProxyEvent) -> str:
    """The part of the URL before the API's own paths: ``/prod`` on the execute-api domain, a custom
    domain's base path mapping, or nothing (an HTTP API's ``$default`` stage, a custom domain at its
    root, the local stack)."""
    if isinstance(event, APIGatewayProxyEventV2):
        outer = event.raw_path or ""
    else:
        outer = event.request_context.path or ""  # type: ignore[attr-defined]
    inner = event.path or ""
    if inner and outer.endswith(inner):
        return outer[: len(outer) - len(inner)].rstrip("/")
    return ""


def server_url(event: BaseProxyEvent) -> str:
    """The base URL this request came in on (API Gateway's domain and stage), or ``/`` locally."""
    domain = event.request_context.domain_name  # type: ignore[attr-defined]
    prefix = base_path(event)
    if domain:
        return f"https://{domain}{prefix}"
    return prefix or "/"


def openapi_document(app: APIGatewayRestResolver, event: BaseProxyEvent, api_auth: str) -> dict[str, Any]:
    """The document Powertools generates from the routes, with this deployment's servers, security
    and the links between operations."""
    name, scheme, how = SECURITY_SCHEMES[api_auth]
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(title=TITLE, version=VERSION, description=f"{DESCRIPTION} {how}")
    )
    document["servers"] = [{"url": server_url(event)}]
    document.setdefault("components", {})["securitySchemes"] = {name: scheme}
    document["security"] = [{name: []}]
    for path, method in PUBLIC_OPERATIONS:
        document["paths"][path][method]["security"] = []
    add_links(document)
    return document


def swagger_page(event: BaseProxyEvent) -> str:
    """Swagger UI: a few hundred bytes that load the UI's assets and the document by URL."""
    prefix = base_path(event)
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
# then read and cancel the run it started. Every answer carrying a job (JobOut) leads to the job's
# other operations; every answer carrying a run (RunOut) to the run's and to its job. Lists have no
# links: `items/0` of an empty page does not resolve.
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
]
RUN_ANSWERS = [("post", _JOB + "/run", "202"), ("get", _RUN, "200"), ("post", _RUN + "/cancel", "200")]


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
    for answers, targets, ids in (
        (JOB_ANSWERS, JOB_OPERATIONS, job),
        (RUN_ANSWERS, {**RUN_OPERATIONS, "GetJob": JOB_OPERATIONS["GetJob"]}, run),
    ):
        for method, path, status in answers:
            response = paths[path][method]["responses"][status]
            response["links"] = {
                name: link(target, ids) for name, target in targets.items() if target != (method, path)
            }
