"""The OpenAPI document's links, as the api handler serves them at ``GET /openapi.json``.

A link says "this answer's field is that operation's parameter"; clients and schemathesis's stateful
phase (tests/e2e/test_schemathesis.py) follow them. Each must name an operation that exists, fill
exactly that operation's path parameters, and read them from string fields the answer always has.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import schemathesis
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.stateful import collect_transitions

from punctual.local.gateway import LambdaContext, build_event
from punctual_functions.api import handler as api

JOB = "/v1/jobs/{job_id}"
RUN = "/v1/jobs/{job_id}/runs/{run_id}"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    event = build_event("GET", "/openapi.json", {}, b"", None)
    result = api.handler(event, LambdaContext())  # type: ignore[arg-type]
    assert result["statusCode"] == 200, result
    body: dict[str, Any] = json.loads(result["body"])
    return body


def operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (METHOD, path, operation)."""
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            assert operation["operationId"] not in found, f"duplicate operationId {operation['operationId']}"
            found[operation["operationId"]] = (method.upper(), path, operation)
    return found


def links(document: dict[str, Any]) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(METHOD, path, status, link name, link) of every link in the document."""
    return [
        (method.upper(), path, status, name, link)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
        for status, response in operation["responses"].items()
        for name, link in response.get("links", {}).items()
    ]


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        assert schema["$ref"].startswith("#/"), schema
        target: Any = document
        for part in schema["$ref"][2:].split("/"):
            target = target[part]
        schema = target
    return schema


def field_schema(document: dict[str, Any], schema: dict[str, Any], pointer: str) -> dict[str, Any]:
    """The schema at a JSON pointer into a body, asserting every step is always present."""
    for part in pointer.lstrip("/").split("/"):
        schema = resolve(document, schema)
        if part.isdigit():
            assert schema.get("type") == "array", (pointer, schema)
            schema = schema["items"]
        else:
            assert part in schema.get("properties", {}), (pointer, part, schema)
            assert part in schema.get("required", []), f"{part} of {pointer} is not always in the answer"
            schema = schema["properties"][part]
    return resolve(document, schema)


def test_given_the_document_when_read_then_every_link_names_an_existing_operation_and_fills_its_path(
    document: dict[str, Any],
) -> None:
    by_id = operations(document)
    found = links(document)
    assert len(found) >= 40
    for method, path, status, name, link in found:
        where = f"{method} {path} {status} {name}"
        assert set(link) <= {"operationId", "parameters", "description"}, where
        assert link["operationId"] in by_id, where
        _, target_path, target = by_id[link["operationId"]]
        path_parameters = {p["name"] for p in target.get("parameters", []) if p["in"] == "path"}
        assert path_parameters, f"{where}: a link to an operation without ids gains nothing"
        assert set(link["parameters"]) == {f"path.{name}" for name in path_parameters}, where
        assert all(f"{{{name}}}" in target_path for name in path_parameters), where


def test_given_the_document_when_read_then_every_link_reads_a_string_the_answer_always_has(
    document: dict[str, Any],
) -> None:
    for method, path, status, name, link in links(document):
        response = document["paths"][path][method.lower()]["responses"][status]
        schema = response["content"]["application/json"]["schema"]
        for parameter, expression in link["parameters"].items():
            assert expression.startswith("$response.body#/"), (method, path, name, parameter)
            pointer = expression.removeprefix("$response.body#")
            leaf = field_schema(document, schema, pointer)
            assert leaf.get("type") == "string", (method, path, name, parameter, leaf)
            # the answer's field has the parameter's name: job_id feeds job_id, run_id feeds run_id
            assert pointer.rsplit("/", 1)[-1] == parameter.removeprefix("path."), (name, parameter)


def test_given_the_document_when_read_then_a_created_job_and_a_started_run_lead_to_their_operations(
    document: dict[str, Any],
) -> None:
    by_id = operations(document)

    def targets(method: str, path: str, status: str) -> set[tuple[str, str]]:
        found = document["paths"][path][method]["responses"][status].get("links", {})
        return {by_id[link["operationId"]][:2] for link in found.values()}

    job_operations = {
        ("GET", JOB),
        ("PATCH", JOB),
        ("DELETE", JOB),
        ("POST", JOB + "/pause"),
        ("POST", JOB + "/resume"),
        ("POST", JOB + "/run"),
        ("GET", JOB + "/runs"),
        ("GET", JOB + "/changes"),
    }
    assert targets("post", "/v1/jobs", "201") == job_operations
    job_answers = [
        ("get", JOB),
        ("patch", JOB),
        ("delete", JOB),
        ("post", JOB + "/pause"),
        ("post", JOB + "/resume"),
        ("post", JOB + "/restore"),
    ]
    for method, path in job_answers:
        assert targets(method, path, "200") == job_operations - {(method.upper(), path)}, (method, path)
    assert targets("post", JOB + "/run", "202") == {("GET", RUN), ("POST", RUN + "/cancel"), ("GET", JOB)}
    assert targets("get", RUN, "200") == {("POST", RUN + "/cancel"), ("GET", JOB)}
    assert targets("post", RUN + "/cancel", "200") == {("GET", RUN), ("GET", JOB)}
    calendar = "/v1/calendars/{name}"
    calendar_operations = {
        ("GET", calendar),
        ("PUT", calendar),
        ("DELETE", calendar),
        ("GET", calendar + "/days"),
    }
    assert targets("post", "/v1/calendars", "201") == calendar_operations
    assert targets("put", calendar, "200") == calendar_operations - {("PUT", calendar)}
    assert "links" not in document["paths"][calendar]["delete"]["responses"]["200"], "a deleted one is gone"


def test_given_the_document_when_schemathesis_loads_it_then_it_follows_every_link(
    document: dict[str, Any],
) -> None:
    # Invalid links (an unknown operation, a parameter the target lacks) fail here, not in the e2e run.
    # (schemathesis adds the links it infers to the document it is given: give it copies.)
    schema = schemathesis.openapi.from_dict(copy.deepcopy(document))
    loaded = list(schema.get_all_operations())
    operations = [result.ok() for result in loaded if isinstance(result, Ok)]
    assert len(operations) == len(loaded), [result for result in loaded if not isinstance(result, Ok)]
    transitions = collect_transitions(operations)
    followed = {link.full_name for links in transitions.operations.values() for link in links.outgoing}
    assert len(followed) == len(links(document))
    assert "POST /v1/jobs -> [201] RunJobNow -> POST /v1/jobs/{job_id}/run" in followed
    assert f"POST {JOB}/run -> [202] GetRun -> GET {RUN}" in followed
    schemathesis.openapi.from_dict(copy.deepcopy(document)).as_state_machine()


TARGET_FIELDS = {
    "http": ({"type", "url"}, {"method", "headers", "timeout_seconds"}),
    "lambda": ({"type", "function"}, set()),
    "sqs": ({"type", "queue_url"}, set()),
    "sns": ({"type", "topic_arn"}, set()),
    "eventbridge": ({"type"}, {"bus", "source", "detail_type"}),
}


# A stored target, as answers show it: validate_target's form, with its defaults filled in.
STORED_TARGET_FIELDS = {
    "http": ({"type", "url", "method", "headers"}, {"timeout_seconds"}),
    "lambda": ({"type", "function"}, set()),
    "sqs": ({"type", "queue_url"}, set()),
    "sns": ({"type", "topic_arn"}, set()),
    "eventbridge": ({"type", "bus", "source", "detail_type"}, set()),
}


def check_target_union(
    document: dict[str, Any], target: dict[str, Any], fields: dict[str, tuple[set[str], set[str]]]
) -> dict[str, str]:
    """The union's discriminator mapping, each type's model checked against ``fields``."""
    assert target["discriminator"]["propertyName"] == "type"
    mapping: dict[str, str] = target["discriminator"]["mapping"]
    assert set(mapping) == set(fields)
    assert sorted(option["$ref"] for option in target["oneOf"]) == sorted(mapping.values())
    for kind, (required, optional) in fields.items():
        model = resolve(document, {"$ref": mapping[kind]})
        assert model["properties"]["type"]["const"] == kind
        assert set(model["properties"]) == required | optional, kind
        assert set(model["required"]) == required, kind
        assert model["additionalProperties"] is False, kind  # unknown fields are refused
        assert all(model["properties"][name].get("description") for name in required - {"type"}), kind
    return mapping


def test_given_the_document_when_read_then_a_job_answers_its_target_as_stored(
    document: dict[str, Any],
) -> None:
    target = document["components"]["schemas"]["JobOut"]["properties"]["target"]
    mapping = check_target_union(document, target, STORED_TARGET_FIELDS)
    assert all(ref.endswith("TargetOut") for ref in mapping.values()), (
        "answers are typed by the answer models"
    )


def test_given_the_document_when_read_then_the_target_lists_every_target_types_fields(
    document: dict[str, Any],
) -> None:
    target = document["components"]["schemas"]["CreateJobIn"]["properties"]["target"]
    mapping = check_target_union(document, target, TARGET_FIELDS)
    http = resolve(document, {"$ref": mapping["http"]})["properties"]
    assert http["method"]["default"] == "POST"
    assert http["method"]["anyOf"][0]["enum"] == ["GET", "POST", "PUT", "PATCH", "DELETE"]
    assert http["timeout_seconds"]["anyOf"][0] == {
        "type": "number",
        "maximum": 840.0,
        "exclusiveMinimum": 0.0,
    }
    eventbridge = resolve(document, {"$ref": mapping["eventbridge"]})["properties"]
    assert [eventbridge[name]["default"] for name in ("bus", "source", "detail_type")] == [
        "default",
        "punctual",
        "Punctual Job Run",
    ]


def test_given_the_document_when_read_then_a_patch_may_replace_the_target_with_any_type(
    document: dict[str, Any],
) -> None:
    target = document["components"]["schemas"]["PatchJobIn"]["properties"]["target"]
    union = next(option for option in target["anyOf"] if "oneOf" in option)
    assert set(union["discriminator"]["mapping"]) == set(TARGET_FIELDS)


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of ``X | None`` (``anyOf: [X, null]``), or the schema itself."""
    options: list[dict[str, Any]] = [o for o in schema.get("anyOf", [schema]) if o.get("type") != "null"]
    assert len(options) == 1, schema
    return options[0]


# The answers' times: (schema, field), each an ISO 8601 instant in UTC.
TIMES = [
    ("JobOut", "created_at"),
    ("JobOut", "updated_at"),
    ("JobOut", "next_run_at"),
    ("JobOut", "deletes_at"),
    ("PauseOut", "at"),
    ("PauseOut", "until"),
    ("RunOut", "scheduled_for"),
    ("RunOut", "queued_at"),
    ("RunOut", "started_at"),
    ("RunOut", "finished_at"),
    ("RunOut", "covers_until"),
    ("RunOut", "next_attempt_at"),
    ("RunSummaryOut", "scheduled_for"),
    ("RunSummaryOut", "finished_at"),
    ("AttemptOut", "started_at"),
    ("AttemptOut", "finished_at"),
    ("ScheduleOut", "at"),
    ("ScheduleOut", "start_at"),
    ("ScheduleOut", "end_at"),
    ("BackfillOut", "from"),
    ("BackfillOut", "to"),
    ("FireTimeOut", "at"),
    ("MissedOut", "scheduled_for"),
    ("OutageOut", "from"),
    ("OutageOut", "to"),
    ("OutageOut", "resumes_with"),
]


@pytest.mark.parametrize(("schema", "field"), TIMES)
def test_given_the_document_when_read_then_an_answers_times_are_date_times(
    document: dict[str, Any], schema: str, field: str
) -> None:
    described = nullable(document["components"]["schemas"][schema]["properties"][field])
    assert (described.get("type"), described.get("format")) == ("string", "date-time")


@pytest.mark.parametrize(("schema", "field"), [("JobOut", "upcoming"), ("BackfillOut", "occurrences")])
def test_given_the_document_when_read_then_lists_of_times_are_date_times(
    document: dict[str, Any], schema: str, field: str
) -> None:
    items = document["components"]["schemas"][schema]["properties"][field]["items"]
    assert items == {"type": "string", "format": "date-time"}


def test_given_the_document_when_read_then_a_jobs_schedule_is_a_typed_object_like_the_one_sent(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    schedule = schemas["JobOut"]["properties"]["schedule"]
    assert schedule == {"$ref": "#/components/schemas/ScheduleOut"}
    answered = resolve(document, schedule)
    sent = schemas["ScheduleIn"]["properties"]
    # What a create sends, the answer shows (normalized: times in UTC, a rate as "5 minutes").
    assert set(answered["properties"]) == set(sent)
    assert set(answered["required"]) == {"timezone", "misfire", "overlap", "catchup_seconds"}
    for policy in ("misfire", "overlap"):
        assert answered["properties"][policy]["$ref"] == sent[policy]["$ref"], "one enum for both"
    assert resolve(document, sent["misfire"])["enum"] == ["run_once", "skip", "run_all"]


@pytest.mark.parametrize(
    ("schema", "field", "enum"),
    [
        ("JobOut", "status", "JobStatus"),
        ("JobOut", "on_complete", "OnComplete"),
        ("CreateJobIn", "on_complete", "OnComplete"),
        ("RunOut", "status", "RunStatus"),
        ("RunOut", "kind", "RunKind"),
        ("RunSummaryOut", "status", "RunStatus"),
        ("BackfillIn", "overlap", "OverlapPolicy"),
        ("OutageOut", "misfire", "MisfirePolicy"),
    ],
)
def test_given_the_document_when_read_then_choices_are_the_domains_enums(
    document: dict[str, Any], schema: str, field: str, enum: str
) -> None:
    assert document["components"]["schemas"][schema]["properties"][field]["$ref"] == (
        f"#/components/schemas/{enum}"
    )


def test_given_the_document_when_read_then_a_jobs_retry_alerts_and_dead_letter_are_typed(
    document: dict[str, Any],
) -> None:
    job = document["components"]["schemas"]["JobOut"]["properties"]
    assert job["retry"] == {"$ref": "#/components/schemas/RetryOut"}
    assert nullable(job["alerts"]) == {"$ref": "#/components/schemas/AlertsOut"}
    assert nullable(job["dead_letter"]) == {"$ref": "#/components/schemas/SqsTargetOut"}
