"""Every endpoint of the HTTP API, end to end through the local stack (``punctual local``) over HTTP.

Most tests use the session's stack (``local_stack``, owner ``local``). Owner isolation needs two
identities, so this module starts a second, small stack of its own with
``PUNCTUAL_TOKENS="alice-token=alice,bob-token=bob,carol-token=carol"``; carol's jobs exist only in
the tests that use her, which makes exact listings and counts possible.

Jobs here fire a few seconds out at a local webhook receiver, so the whole module takes well under
a minute.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.testing.receiver import Receiver
from punctual.testing.stack import local_stack
from punctual.verify import verify
from punctual_functions.core import tracing
from punctual_functions.core.model import iso, parse_iso
from punctual_functions.core.settings import Settings
from punctual_functions.worker.arrival import PRESTART_SECONDS
from tests.e2e.conftest import Api, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]

TOKENS = {"alice": "alice-token", "bob": "bob-token", "carol": "carol-token"}
SECRET = "a-signing-secret-of-32-characters"


def send(
    api: Api,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One HTTP request; returns (status, headers, parsed JSON body or the text)."""
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api.base_url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token != "":
        request.add_header("Authorization", f"Bearer {token or api.token}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, answer, text = response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        status, answer, text = error.code, dict(error.headers.items()), error.read()
    try:
        return status, answer, json.loads(text or b"null")
    except ValueError:
        return status, answer, text.decode(errors="replace")


def create(api: Api, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    status, job = api.call("POST", "/v1/jobs", body, token=token)
    assert status == 201, job
    return job  # type: ignore[no-any-return]


# A job due this far out is queued by the API at once (inside the look-ahead), and its SQS message
# becomes visible a head start to a second more before it is due (0.25 to 1.25 s); a change made
# before then is seen by the worker.
EARLY_MESSAGE_MARGIN = 4


def at(seconds: float) -> datetime:
    """The first whole second at least ``seconds`` from now."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.replace(microsecond=0) + timedelta(seconds=1 if moment.microsecond else 0)


def one_off(receiver: Receiver, path: str, due: datetime, **extra: Any) -> dict[str, Any]:
    return {
        "schedule": {"at": iso(due)},
        "target": {"type": "http", "url": receiver.url + path},
        **extra,
    }


def daily(url: str = "https://example.com/hook", **extra: Any) -> dict[str, Any]:
    return {
        "schedule": {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"},
        "target": {"type": "http", "url": url},
        **extra,
    }


def run_status(api: Api, job_id: str, run_id: str, token: str | None = None) -> str:
    status, run = api.call("GET", f"/v1/jobs/{job_id}/runs/{run_id}", token=token)
    assert status == 200, run
    return str(run["status"])


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


@pytest.fixture(scope="module")
def owners_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """A second local stack that knows three owners (the session's stack only knows ``local``)."""
    state = tmp_path_factory.mktemp("owners-stack")
    tokens = ",".join(f"{token}={owner}" for owner, token in TOKENS.items())
    with local_stack(state, workers=1, env={"PUNCTUAL_TOKENS": tokens}) as stack:
        yield Api(stack.base_url, stack.state_dir, token=TOKENS["alice"])


# ----------------------------------------------------------------------------------- system routes


def test_given_no_token_when_health_is_called_then_200_ok(local_stack: Api) -> None:
    status, headers, body = send(local_stack, "GET", "/v1/health", token="")
    assert (status, body) == (200, {"status": "ok"})
    assert headers["Content-Type"].startswith("application/json")


def test_given_no_token_when_the_openapi_document_is_fetched_then_it_describes_every_route(
    local_stack: Api,
) -> None:
    status, headers, document = send(local_stack, "GET", "/openapi.json", token="")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "Punctual"
    routes = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    assert routes >= {
        ("POST", "/v1/jobs"),
        ("GET", "/v1/jobs"),
        ("GET", "/v1/jobs/{job_id}"),
        ("PATCH", "/v1/jobs/{job_id}"),
        ("DELETE", "/v1/jobs/{job_id}"),
        ("POST", "/v1/jobs/{job_id}/pause"),
        ("POST", "/v1/jobs/{job_id}/resume"),
        ("POST", "/v1/jobs/{job_id}/run"),
        ("GET", "/v1/jobs/{job_id}/runs"),
        ("GET", "/v1/jobs/{job_id}/runs/{run_id}"),
        ("POST", "/v1/jobs/{job_id}/runs/{run_id}/cancel"),
        ("GET", "/v1/stats"),
        ("GET", "/v1/health"),
    }
    schemas = document["components"]["schemas"]
    assert {
        "CreateJobIn",
        "PatchJobIn",
        "JobOut",
        "RunOut",
        "JobPage",
        "RunPage",
        "StatsOut",
        "ErrorOut",
    } <= set(schemas)
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert document["security"] == [{"bearer": []}]


SUCCESS = {
    ("POST", "/v1/jobs"): "201",
    ("POST", "/v1/jobs/{job_id}/run"): "202",
    ("POST", "/v1/jobs/{job_id}/backfill"): "202",
    ("POST", "/v1/calendars"): "201",
    ("POST", "/v1/limits"): "201",
}


def test_given_the_openapi_document_when_read_then_every_operation_declares_its_success_response(
    local_stack: Api,
) -> None:
    _, _, document = send(local_stack, "GET", "/openapi.json", token="")
    missing = [
        f"{method.upper()} {path}"
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if SUCCESS.get((method.upper(), path), "200") not in op["responses"]
    ]
    assert missing == []


def test_given_the_openapi_document_when_read_then_health_needs_no_credentials(local_stack: Api) -> None:
    _, _, document = send(local_stack, "GET", "/openapi.json", token="")
    assert document["paths"]["/v1/health"]["get"].get("security") == []


def test_given_no_token_when_docs_are_opened_then_swagger_ui_is_served(local_stack: Api) -> None:
    status, headers, page = send(local_stack, "GET", "/docs", token="")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "swagger" in page.lower()


@pytest.mark.parametrize("token", ["", "not-a-token"])
def test_given_no_or_a_bad_token_when_a_job_route_is_called_then_401(local_stack: Api, token: str) -> None:
    status, _, body = send(local_stack, "GET", "/v1/jobs", token=token)
    assert status == 401 and body["error"] == "unauthorized"


# ------------------------------------------------------------------------------------------ jobs


def test_given_a_one_off_job_with_a_secret_when_created_then_201_and_it_is_delivered_signed_at_its_second(
    local_stack: Api, receiver: Receiver
) -> None:
    due = at(2)
    body = one_off(
        receiver,
        "/created",
        due,
        name=f"e2e-create-{time.time_ns()}",
        payload={"report": "sales"},
        signing_secret=SECRET,
        tags={"suite": "e2e"},
    )
    body["target"]["headers"] = {"X-Team": "data"}
    status, headers, job = send(local_stack, "POST", "/v1/jobs", body)
    assert status == 201, job
    assert headers["Content-Type"].startswith("application/json")
    assert job["job_id"].startswith("job_") and job["status"] == "ACTIVE"
    assert job["next_run_at"] == iso(due) and job["upcoming"] == [iso(due)]
    assert job["has_signing_secret"] is True and "signing_secret" not in job and SECRET not in json.dumps(job)
    assert job["target"] == {
        "type": "http",
        "url": receiver.url + "/created",
        "method": "POST",
        "headers": {"X-Team": "data"},
    }, "without a timeout of its own, an HTTP call may take the job's whole timeout_seconds"
    assert job["retry"] == {"max_attempts": 3, "backoff_seconds": 5.0, "max_backoff_seconds": 600.0}

    (delivery,) = receiver.wait_for("/created", 1, timeout=(due - datetime.now(UTC)).total_seconds() + 10)
    assert delivery.received_at >= due.timestamp(), "fired early"
    assert delivery.json == {"report": "sales"}
    sent = {key.lower(): value for key, value in delivery.headers.items()}
    assert sent["x-team"] == "data"
    assert sent["punctual-job-id"] == job["job_id"]
    assert sent["idempotency-key"] == sent["punctual-run-id"]
    assert sent["punctual-attempt"] == "1"
    assert parse_iso(sent["punctual-scheduled-for"]) == due
    assert verify(SECRET, sent["punctual-signature"], delivery.body)
    assert not verify("another-secret-of-enough-length", sent["punctual-signature"], delivery.body)


def test_given_an_idempotency_key_when_a_create_is_retried_over_http_then_the_first_job_is_returned(
    local_stack: Api,
) -> None:
    key = {"Idempotency-Key": f"e2e-{time.time_ns()}"}
    body = daily()
    first = send(local_stack, "POST", "/v1/jobs", body, headers=key)
    second = send(local_stack, "POST", "/v1/jobs", body, headers=key)
    assert first[0] == second[0] == 201
    assert first[2]["job_id"] == second[2]["job_id"]
    status, _, error = send(local_stack, "POST", "/v1/jobs", {**body, "payload": 1}, headers=key)
    assert status == 409 and error["field"] == "Idempotency-Key"
    local_stack.call("DELETE", f"/v1/jobs/{first[2]['job_id']}")


def test_given_a_batch_over_http_then_each_job_is_answered_on_its_own(local_stack: Api) -> None:
    key = {"Idempotency-Key": f"batch-{time.time_ns()}"}
    jobs = [daily(), {**daily(), "schedule": {"cron": "0 0 30 2 *"}}, daily()]
    status, _, answer = send(local_stack, "POST", "/v1/jobs/batch", {"jobs": jobs}, headers=key)
    assert status == 200, answer
    assert [(item["index"], item["status"]) for item in answer["items"]] == [(0, 201), (1, 422), (2, 201)]
    assert answer["items"][1]["error"]["field"] == "schedule.cron"
    again = send(local_stack, "POST", "/v1/jobs/batch", {"jobs": jobs}, headers=key)[2]
    assert [i.get("job", {}).get("job_id") for i in again["items"]] == [
        i.get("job", {}).get("job_id") for i in answer["items"]
    ]
    status, _, error = send(local_stack, "POST", "/v1/jobs/batch", {"jobs": [daily()] * 101})
    assert (status, error["field"]) == (422, "jobs"), error
    status, _, error = send(local_stack, "POST", "/v1/jobs/batch", {"jobs": []})
    assert (status, error["field"]) == (422, "jobs"), error
    for item in answer["items"]:
        if item["status"] == 201:
            local_stack.call("DELETE", f"/v1/jobs/{item['job']['job_id']}")


def test_given_a_batch_body_over_64_kib_over_http_then_the_api_takes_it_as_on_aws(local_stack: Api) -> None:
    """API Gateway takes 10 MB; the API holds a batch to 1 MiB and each job to 64 KiB. (The local
    gateway once refused every body over 64 KiB itself, so a batch AWS takes was refused locally.)"""
    jobs = [{**daily(), "payload": {"pad": "x" * 2000}} for _ in range(50)]  # about 110 KiB
    status, _, answer = send(local_stack, "POST", "/v1/jobs/batch", {"jobs": jobs})
    assert status == 200 and [item["status"] for item in answer["items"]] == [201] * 50, answer
    for item in answer["items"]:
        local_stack.call("DELETE", f"/v1/jobs/{item['job']['job_id']}")
    too_big = [{**daily(), "payload": {"pad": "x" * 15000}} for _ in range(80)]  # about 1.2 MiB
    status, _, error = send(local_stack, "POST", "/v1/jobs/batch", {"jobs": too_big})
    assert (status, error["field"]) == (413, "body"), error


def test_given_bad_input_over_http_when_creating_then_4xx_names_the_field(local_stack: Api) -> None:
    status, _, error = send(local_stack, "POST", "/v1/jobs", {**daily(), "schedule": {"cron": "0 0 30 2 *"}})
    assert (status, error["field"]) == (422, "schedule.cron"), error
    status, _, error = send(local_stack, "POST", "/v1/jobs", raw=b'{"schedule": ')
    assert (status, error["field"]) == (400, "body"), error
    big = json.dumps({**daily(), "payload": "x" * (64 * 1024)}).encode()
    status, _, error = send(local_stack, "POST", "/v1/jobs", raw=big)
    assert (status, error["error"], error["field"]) == (413, "payload_too_large", "body"), error


def test_given_a_job_when_read_then_it_shows_status_next_run_and_five_upcoming_times(
    local_stack: Api,
) -> None:
    job = create(local_stack, daily(name=f"e2e-get-{time.time_ns()}"))
    status, got = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
    assert status == 200, got
    assert got["job_id"] == job["job_id"] and got["name"] == job["name"]
    assert got["status"] == "ACTIVE" and got["last_run"] is None and got["run_counts"] == {}
    assert len(got["upcoming"]) == 5 and got["next_run_at"] == got["upcoming"][0]
    # 13:00 in Berlin is 12:00 UTC in winter and 11:00 UTC in summer, on weekdays only
    for moment in map(parse_iso, got["upcoming"]):
        assert moment.hour in (11, 12) and moment.minute == 0 and moment.weekday() < 5
    assert got["schedule"] == {
        "cron": "0 13 * * 1-5",
        "timezone": "Europe/Berlin",
        "misfire": "run_once",
        "overlap": "allow",
        "catchup_seconds": None,
        "calendar": None,
        "on_excluded": None,
    }
    assert got["created_at"].endswith("Z") and got["version"] >= 1
    status, error = local_stack.call("GET", "/v1/jobs/job_does_not_exist")
    assert status == 404 and error["field"] == "job_id"
    local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")


def test_given_a_one_off_job_when_its_time_is_patched_then_it_fires_at_the_new_time_only(
    local_stack: Api, receiver: Receiver
) -> None:
    # Due within the look-ahead, so queued at once; its message becomes visible ~1 s before it is due.
    first_due = at(EARLY_MESSAGE_MARGIN)
    job = create(local_stack, one_off(receiver, "/patched", first_due))
    new_due = first_due + timedelta(seconds=2)
    status, patched = local_stack.call(
        "PATCH", f"/v1/jobs/{job['job_id']}", {"schedule": {"at": iso(new_due)}, "tags": {"moved": "yes"}}
    )
    assert status == 200, patched
    assert patched["next_run_at"] == iso(new_due) and patched["tags"] == {"moved": "yes"}
    assert patched["version"] > job["version"]
    deliveries = receiver.wait_for("/patched", 1, timeout=(new_due - datetime.now(UTC)).total_seconds() + 10)
    assert len(deliveries) == 1
    assert deliveries[0].received_at >= new_due.timestamp(), "the old time still fired"
    assert parse_iso(deliveries[0].headers["Punctual-Scheduled-For"]) == new_due
    time.sleep(0.5)
    assert len(receiver.for_path("/patched")) == 1


def test_given_a_job_when_deleted_then_it_is_cancelled_never_fires_and_keeps_its_history(
    local_stack: Api, receiver: Receiver
) -> None:
    job = create(local_stack, one_off(receiver, "/deleted", at(EARLY_MESSAGE_MARGIN)))
    status, run = local_stack.call("POST", f"/v1/jobs/{job['job_id']}/run")
    assert status == 202
    assert receiver.wait_for("/deleted", 1, timeout=10), "run now was not delivered"
    status, cancelled = local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")
    assert status == 200, cancelled
    assert (
        cancelled["status"] == "CANCELLED"
        and cancelled["next_run_at"] is None
        and cancelled["upcoming"] == []
    )
    time.sleep(max(0.0, parse_iso(job["next_run_at"]).timestamp() - time.time()) + 1.5)
    assert len(receiver.for_path("/deleted")) == 1, "a cancelled job fired"
    status, got = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
    assert status == 200 and got["status"] == "CANCELLED"
    status, runs = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs")
    assert status == 200, runs
    history = {r["run_id"]: r["status"] for r in runs["items"]}
    assert history.pop(run["run_id"]) == "SUCCEEDED", "history is kept"
    # the occurrence that was already queued when the job was cancelled is recorded as CANCELLED
    assert set(history.values()) <= {"CANCELLED"}, history
    status, error = local_stack.call("PATCH", f"/v1/jobs/{job['job_id']}", {"tags": {}})
    assert status == 409 and error["field"] == "status"


def test_given_a_due_job_when_paused_then_it_does_not_fire(local_stack: Api, receiver: Receiver) -> None:
    due = at(EARLY_MESSAGE_MARGIN)
    job = create(local_stack, one_off(receiver, "/paused", due))
    status, paused = local_stack.call("POST", f"/v1/jobs/{job['job_id']}/pause")
    assert status == 200, paused
    assert paused["status"] == "PAUSED" and paused["upcoming"] == [] and paused["next_run_at"] is None
    time.sleep(max(0.0, due.timestamp() - time.time()) + 1.5)
    assert receiver.for_path("/paused") == [], "a paused job fired"
    status, got = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
    assert got["status"] == "PAUSED"
    status, runs = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs")
    assert all(run["status"] != "SUCCEEDED" for run in runs["items"])
    local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")


def test_given_a_paused_one_off_whose_time_passed_when_resumed_then_it_fires_at_once(
    local_stack: Api, receiver: Receiver
) -> None:
    due = at(EARLY_MESSAGE_MARGIN)
    job = create(local_stack, one_off(receiver, "/resumed", due))
    assert local_stack.call("POST", f"/v1/jobs/{job['job_id']}/pause")[0] == 200
    time.sleep(max(0.0, due.timestamp() - time.time()) + 1)
    assert receiver.for_path("/resumed") == []
    resumed_at = time.time()
    status, resumed = local_stack.call("POST", f"/v1/jobs/{job['job_id']}/resume")
    assert status == 200, resumed
    assert resumed["status"] == "ACTIVE" and resumed["next_run_at"] == iso(due)
    deliveries = receiver.wait_for("/resumed", 1, timeout=10)
    assert len(deliveries) == 1 and deliveries[0].received_at >= resumed_at
    assert wait_until(
        lambda: local_stack.call("GET", f"/v1/jobs/{job['job_id']}")[1]["status"] == "COMPLETED", 5
    )


def test_given_occurrences_about_to_fire_when_paused_cancelled_or_rescheduled_a_second_before_then_none_fires(
    local_stack: Api, receiver: Receiver
) -> None:
    due = at(EARLY_MESSAGE_MARGIN)
    jobs = {
        path: create(local_stack, one_off(receiver, path, due))
        for path in ("/late-pause", "/late-delete", "/late-patch")
    }
    # The worker may hold the messages already (they arrive 0.25 to 1.25 s before the due time); it
    # starts their attempts PRESTART_SECONDS before it at the earliest (changes after that may not stop
    # them), so the changes land half a second before that.
    time.sleep(max(0.0, due.timestamp() - time.time() - PRESTART_SECONDS - 0.5))
    changes = [
        ("POST", f"/v1/jobs/{jobs['/late-pause']['job_id']}/pause", None),
        ("DELETE", f"/v1/jobs/{jobs['/late-delete']['job_id']}", None),
        (
            "PATCH",
            f"/v1/jobs/{jobs['/late-patch']['job_id']}",
            {"schedule": {"at": iso(due + timedelta(hours=1))}},
        ),
    ]
    for method, path, body in changes:
        status, answer = local_stack.call(method, path, body)
        assert status == 200, answer
    time.sleep(max(0.0, due.timestamp() - time.time()) + 1.5)
    for job in jobs.values():
        local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")
    fired = {path: len(receiver.for_path(path)) for path in jobs}
    assert fired == {"/late-pause": 0, "/late-delete": 0, "/late-patch": 0}


# ------------------------------------------------------------------------------------------ runs


def test_given_a_job_when_run_now_then_202_and_the_run_is_delivered_and_recorded(
    local_stack: Api, receiver: Receiver
) -> None:
    job = create(local_stack, daily(receiver.url + "/now", payload={"n": 1}))
    status, headers, run = send(local_stack, "POST", f"/v1/jobs/{job['job_id']}/run")
    assert status == 202, run
    assert headers["Content-Type"].startswith("application/json")
    assert run["job_id"] == job["job_id"] and run["kind"] == "manual"
    assert run["status"] in ("QUEUED", "RUNNING", "SUCCEEDED", "SCHEDULED")
    (delivery,) = receiver.wait_for("/now", 1, timeout=10)
    assert delivery.headers["Punctual-Run-Id"] == run["run_id"] and delivery.json == {"n": 1}
    assert wait_until(lambda: run_status(local_stack, job["job_id"], run["run_id"]) == "SUCCEEDED", 5)
    local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")


def test_given_three_runs_when_the_history_is_paged_then_newest_first_with_filters(
    local_stack: Api, receiver: Receiver
) -> None:
    job = create(local_stack, daily(receiver.url + "/history"))
    run_ids = []
    for _ in range(3):
        status, run = local_stack.call("POST", f"/v1/jobs/{job['job_id']}/run")
        assert status == 202, run
        run_ids.append(run["run_id"])
        time.sleep(0.01)
    assert len(receiver.wait_for("/history", 3, timeout=10)) == 3
    job_id = job["job_id"]
    assert wait_until(lambda: all(run_status(local_stack, job_id, r) == "SUCCEEDED" for r in run_ids), 5)
    seen: list[str] = []
    cursor = None
    while True:
        status, page = local_stack.call(
            "GET", f"/v1/jobs/{job_id}/runs?limit=2" + (f"&cursor={cursor}" if cursor else "")
        )
        assert status == 200, page
        assert len(page["items"]) <= 2
        seen.extend(run["run_id"] for run in page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == list(reversed(run_ids)), "newest first, none missing, none twice"
    status, succeeded = local_stack.call("GET", f"/v1/jobs/{job_id}/runs?status=SUCCEEDED&limit=100")
    assert {r["run_id"] for r in succeeded["items"]} == set(run_ids)
    status, failed = local_stack.call("GET", f"/v1/jobs/{job_id}/runs?status=FAILED")
    assert failed == {"items": [], "next_cursor": None}
    status, error = local_stack.call("GET", f"/v1/jobs/{job_id}/runs?status=DONE")
    assert status == 422 and error["field"] == "status"
    local_stack.call("DELETE", f"/v1/jobs/{job_id}")


def test_given_a_finished_run_when_read_then_it_shows_its_attempts(
    local_stack: Api, receiver: Receiver
) -> None:
    job = create(local_stack, daily(receiver.url + "/detail"))
    _, run = local_stack.call("POST", f"/v1/jobs/{job['job_id']}/run")
    assert receiver.wait_for("/detail", 1, timeout=10)
    assert wait_until(lambda: run_status(local_stack, job["job_id"], run["run_id"]) == "SUCCEEDED", 5)
    status, detail = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}")
    assert status == 200, detail
    assert detail["attempt"] == 1 and detail["executions"] == 1
    assert detail["lateness_ms"] is not None and detail["lateness_ms"] >= 0
    for key in ("scheduled_for", "queued_at", "started_at", "finished_at"):
        assert detail[key] and detail[key].endswith("Z"), key
    (attempt,) = detail["attempts"]
    assert attempt["attempt"] == 1 and attempt["outcome"] == "SUCCEEDED"
    assert attempt["status_code"] == 200 and attempt["response"] == '{"ok": true}'
    assert attempt["duration_ms"] is not None and attempt["duration_ms"] >= 0
    status, view = local_stack.call("GET", f"/v1/jobs/{job['job_id']}")
    assert view["last_run"]["run_id"] == run["run_id"] and view["last_run"]["status"] == "SUCCEEDED"
    assert view["run_counts"].get("SUCCEEDED") == 1
    status, error = local_stack.call("GET", f"/v1/jobs/{job['job_id']}/runs/20200101T000000.000Z-00000000")
    assert status == 404 and error["field"] == "run_id"
    local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")


def test_given_a_queued_run_when_cancelled_then_it_never_starts(local_stack: Api, receiver: Receiver) -> None:
    due = at(3)
    job = create(local_stack, one_off(receiver, "/cancel-run", due))  # queued at once: inside the look-ahead
    job_id = job["job_id"]
    queued = wait_until(lambda: local_stack.call("GET", f"/v1/jobs/{job_id}/runs")[1]["items"], 5)
    assert queued, "the run was not queued"
    (run,) = queued
    assert run["status"] == "QUEUED", run
    status, cancelled = local_stack.call("POST", f"/v1/jobs/{job_id}/runs/{run['run_id']}/cancel")
    assert status == 200, cancelled
    assert cancelled["status"] == "CANCELLED" and cancelled["finished_at"] is not None
    time.sleep(max(0.0, due.timestamp() - time.time()) + 1.5)
    assert receiver.for_path("/cancel-run") == [], "a cancelled run was delivered"
    assert run_status(local_stack, job_id, run["run_id"]) == "CANCELLED"
    view = local_stack.call("GET", f"/v1/jobs/{job_id}")[1]
    assert (view["status"], view["next_run_at"]) == ("CANCELLED", None), "its one run was cancelled"
    status, error = local_stack.call("POST", f"/v1/jobs/{job_id}/runs/{run['run_id']}/cancel")
    assert status == 409 and error["field"] == "status"


def test_given_the_stack_when_stats_are_read_then_counts_and_queue_health_are_reported(
    local_stack: Api,
) -> None:
    job = create(local_stack, daily())
    status, stats = local_stack.call("GET", "/v1/stats")
    assert status == 200, stats
    assert stats["jobs"].get("ACTIVE", 0) >= 1
    assert all(isinstance(count, int) for count in [*stats["jobs"].values(), *stats["runs"].values()])
    assert set(stats["queue"]) == {"queued", "in_flight", "delayed", "dlq"}
    assert stats["dispatcher_lag_seconds"] is None or 0 <= stats["dispatcher_lag_seconds"] < 120
    local_stack.call("DELETE", f"/v1/jobs/{job['job_id']}")
    _, after = local_stack.call("GET", "/v1/stats")
    assert after["jobs"].get("CANCELLED", 0) == stats["jobs"].get("CANCELLED", 0) + 1


# ------------------------------------------------------------------------ two owners (own stack)


def test_given_alices_job_when_bob_calls_every_endpoint_then_404_and_alice_sees_no_change(
    owners_stack: Api, receiver: Receiver
) -> None:
    alice, bob = TOKENS["alice"], TOKENS["bob"]
    job = create(owners_stack, daily(receiver.url + "/alice", name="shared-name"), token=alice)
    job_id = job["job_id"]
    status, run = owners_stack.call("POST", f"/v1/jobs/{job_id}/run", token=alice)
    assert status == 202, run
    assert receiver.wait_for("/alice", 1, timeout=10)
    assert wait_until(lambda: run_status(owners_stack, job_id, run["run_id"], alice) == "SUCCEEDED", 5)
    _, before = owners_stack.call("GET", f"/v1/jobs/{job_id}", token=alice)

    for method, path, body in [
        ("GET", f"/v1/jobs/{job_id}", None),
        ("PATCH", f"/v1/jobs/{job_id}", {"tags": {"owner": "bob"}}),
        ("DELETE", f"/v1/jobs/{job_id}", None),
        ("POST", f"/v1/jobs/{job_id}/pause", None),
        ("POST", f"/v1/jobs/{job_id}/resume", None),
        ("POST", f"/v1/jobs/{job_id}/run", None),
        ("GET", f"/v1/jobs/{job_id}/runs", None),
        ("GET", f"/v1/jobs/{job_id}/runs/{run['run_id']}", None),
        ("POST", f"/v1/jobs/{job_id}/runs/{run['run_id']}/cancel", None),
    ]:
        status, error = owners_stack.call(method, path, body, token=bob)
        assert status == 404 and error["error"] == "not_found", (method, path, error)

    status, bobs = owners_stack.call("GET", "/v1/jobs?limit=100", token=bob)
    assert status == 200 and bobs["items"] == []
    status, bob_stats = owners_stack.call("GET", "/v1/stats", token=bob)
    assert status == 200 and bob_stats["jobs"] == {} and bob_stats["runs"] == {}
    # the same name is free for bob: names are unique per owner
    bobs_job = create(owners_stack, daily(name="shared-name"), token=bob)

    time.sleep(0.5)
    assert len(receiver.for_path("/alice")) == 1, "bob's run-now reached alice's target"
    _, after = owners_stack.call("GET", f"/v1/jobs/{job_id}", token=alice)
    assert after == before
    _, alice_stats = owners_stack.call("GET", "/v1/stats", token=alice)
    assert alice_stats["jobs"] == {"ACTIVE": 1} and alice_stats["runs"] == {"SUCCEEDED": 1}
    _, alices = owners_stack.call("GET", "/v1/jobs", token=alice)
    assert [j["job_id"] for j in alices["items"]] == [job_id]
    _, bobs = owners_stack.call("GET", "/v1/jobs", token=bob)
    assert [j["job_id"] for j in bobs["items"]] == [bobs_job["job_id"]]


def test_given_a_fresh_owner_with_jobs_when_listing_then_filters_and_the_cursor_return_exactly_hers(
    owners_stack: Api,
) -> None:
    carol = TOKENS["carol"]
    created = [create(owners_stack, daily(name=f"carol-{n}"), token=carol)["job_id"] for n in range(5)]
    paused = created[1]
    assert owners_stack.call("POST", f"/v1/jobs/{paused}/pause", token=carol)[0] == 200
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        query = "/v1/jobs?limit=2" + (f"&cursor={cursor}" if cursor else "")
        status, page = owners_stack.call("GET", query, token=carol)
        assert status == 200, page
        pages += 1
        seen.extend(job["job_id"] for job in page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == list(reversed(created)), "newest first, none missing, none twice"
    assert pages in (3, 4)
    _, only_paused = owners_stack.call("GET", "/v1/jobs?status=PAUSED", token=carol)
    assert [job["job_id"] for job in only_paused["items"]] == [paused]
    _, by_name = owners_stack.call("GET", "/v1/jobs?name=carol-3", token=carol)
    assert [job["job_id"] for job in by_name["items"]] == [created[3]]
    _, stats = owners_stack.call("GET", "/v1/stats", token=carol)
    assert stats["jobs"] == {"ACTIVE": 4, "PAUSED": 1}
    status, error = owners_stack.call("GET", "/v1/jobs?cursor=garbage", token=carol)
    assert status == 422 and error["field"] == "cursor"


def test_given_the_tokens_setting_when_an_unknown_token_is_used_then_401_even_for_the_dev_token(
    owners_stack: Api,
) -> None:
    status, body = owners_stack.call("GET", "/v1/jobs", token="local-dev-token")
    assert status == 401 and body["error"] == "unauthorized"


# ------------------------------------------------------------------- the local gateway


@pytest.mark.parametrize("method", ["TRACE", "QUERY"])
def test_given_an_http_method_the_gateway_does_not_know_when_called_then_a_json_4xx(
    local_stack: Api, method: str
) -> None:
    status, _, body = send(local_stack, method, "/v1/jobs")
    assert 400 <= status < 500 and isinstance(body, dict), (status, body)


@pytest.mark.parametrize("method", ["PUT", "OPTIONS"])
def test_given_an_undeclared_method_when_called_then_404_names_the_path(
    local_stack: Api, method: str
) -> None:
    status, _, body = send(local_stack, method, "/v1/stats")
    assert status == 404 and body["field"] == "path", (status, body)


def test_given_a_cron_and_an_outage_when_previewed_then_fire_times_dst_marks_and_the_replay(
    local_stack: Api,
) -> None:
    body = {
        "schedule": {"cron": "30 2 * * *", "timezone": "Europe/Berlin", "misfire": "skip"},
        "after": "2026-03-28T12:00:00",
        "count": 3,
        "outage": {"from": "2026-03-30T01:00:00", "to": "2026-03-30T04:00:00"},
    }
    status, _, preview = send(local_stack, "POST", "/v1/schedules/preview", body)
    assert status == 200, preview
    gap = preview["fire_times"][0]
    assert gap["at"] == "2026-03-29T01:00:00.000Z" and gap["dst"] == {
        "kind": "gap",
        "local": "2026-03-29T02:30:00",
    }
    assert preview["outage"]["occurrences"] == [
        {
            "scheduled_for": "2026-03-30T00:30:00.000Z",
            "local": "2026-03-30T02:30:00+02:00",
            "fate": "skipped",
            "lateness_ms": None,
        }
    ]
    status, _, refused = send(local_stack, "POST", "/v1/schedules/preview", {**body, "count": 500})
    assert status == 422 and refused["field"] == "count"


def test_given_templates_in_url_headers_and_payload_when_the_job_fires_then_the_target_sees_them_filled_in(
    local_stack: Api, receiver: Receiver
) -> None:
    due = at(2)
    body = one_off(
        receiver, "/tmpl/{{run_id}}?attempt={{attempt}}", due, payload={"for": "{{scheduled_for}}"}
    )
    body["target"]["headers"] = {"X-Job": "{{job_id}}"}
    status, _, job = send(local_stack, "POST", "/v1/jobs", body)
    assert status == 201, job
    run = wait_until(
        lambda: (send(local_stack, "GET", f"/v1/jobs/{job['job_id']}/runs")[2]["items"] or [None])[0], 15
    )
    (delivery,) = receiver.wait_for(f"/tmpl/{run['run_id']}?attempt=1", 1, timeout=15)
    assert delivery.json == {"for": iso(due)}
    assert delivery.headers["X-Job"] == job["job_id"]
    _, trace, _span, flags = delivery.headers["traceparent"].split("-")  # W3C Trace Context, per run
    # The flag says whether the run's trace is recorded: a sample of runs, chosen by the run id.
    recorded = tracing.sampled(run["run_id"], Settings().run_trace_percent)
    assert len(trace) == 32 and flags == ("01" if recorded else "00")
    status, _, refused = send(local_stack, "POST", "/v1/jobs", {**body, "payload": {"for": "{{when}}"}})
    assert status == 422 and refused["field"] == "payload"


def test_given_a_jitter_when_the_job_fires_then_at_its_occurrences_delay_never_before(
    local_stack: Api, receiver: Receiver
) -> None:
    due = at(2)
    status, _, job = send(
        local_stack, "POST", "/v1/jobs", one_off(receiver, "/jitter", due, jitter_seconds=6)
    )
    assert status == 201 and job["jitter_seconds"] == 6, job
    (delivery,) = receiver.wait_for("/jitter", 1, timeout=20)
    (run,) = send(local_stack, "GET", f"/v1/jobs/{job['job_id']}/runs")[2]["items"]
    assert run["scheduled_for"] == iso(due) and 0 <= run["jitter_ms"] <= 6000
    fired_at = due.timestamp() + run["jitter_ms"] / 1000
    assert delivery.received_at >= fired_at, "fired before its jittered time"
    assert delivery.received_at - fired_at < 1.0
    assert wait_until(
        lambda: (
            send(local_stack, "GET", f"/v1/jobs/{job['job_id']}/runs")[2]["items"][0]["status"] == "SUCCEEDED"
        ),
        10,
    )
    (run,) = send(local_stack, "GET", f"/v1/jobs/{job['job_id']}/runs")[2]["items"]
    assert run["lateness_ms"] < 1000, "lateness counts from the jittered time"
    status, _, refused = send(
        local_stack,
        "POST",
        "/v1/jobs",
        {**one_off(receiver, "/x", due), "schedule": {"rate": "1 minute"}, "jitter_seconds": 60},
    )
    assert status == 422 and refused["field"] == "jitter_seconds"


def test_given_a_pause_with_a_note_and_until_when_it_ends_then_the_next_occurrence_fires_at_its_second(
    local_stack: Api, receiver: Receiver
) -> None:
    body = {
        "schedule": {"cron": "*/10 * * * * *"},
        "target": {"type": "http", "url": receiver.url + "/paused"},
    }
    status, _, job = send(local_stack, "POST", "/v1/jobs", body)
    assert status == 201, job
    paused_at = datetime.now(UTC)
    until = at(14)
    status, _, paused = send(
        local_stack, "POST", f"/v1/jobs/{job['job_id']}/pause", {"note": "deploying", "until": iso(until)}
    )
    assert status == 200, paused
    assert paused["status"] == "PAUSED" and paused["pause"]["note"] == "deploying"
    assert paused["pause"]["by"] == "local" and paused["pause"]["until"] == iso(until)
    first_after = until + timedelta(seconds=(10 - until.second % 10) % 10)
    receiver.wait_for("/paused", 1, timeout=60)
    wait_until(
        lambda: any(
            parse_iso(d.headers["Punctual-Scheduled-For"]) >= first_after
            for d in receiver.for_path("/paused")
        ),
        30,
    )
    send(local_stack, "DELETE", f"/v1/jobs/{job['job_id']}")
    times = [
        (parse_iso(d.headers["Punctual-Scheduled-For"]), d.received_at) for d in receiver.for_path("/paused")
    ]
    during = [t for t, _ in times if paused_at + timedelta(seconds=1) < t < until]
    assert not during, f"fired while paused: {during}"
    after = [(t, received) for t, received in times if t >= until]
    assert after and after[0][0] == first_after
    assert all(0 <= received - t.timestamp() < 1 for t, received in after), "at their second, never early"
    status, _, shown = send(local_stack, "GET", f"/v1/jobs/{job['job_id']}")
    assert shown["pause"] is None


def test_given_jobs_with_a_tag_when_paused_resumed_and_cancelled_in_bulk_then_each_is_answered(
    local_stack: Api,
) -> None:
    team = f"bulk-{time.time_ns()}"
    ids = [send(local_stack, "POST", "/v1/jobs", daily(tags={"team": team}))[2]["job_id"] for _ in range(3)]
    other = send(local_stack, "POST", "/v1/jobs", daily(tags={"team": team + "-other"}))[2]["job_id"]
    status, _, paused = send(
        local_stack, "POST", "/v1/jobs/bulk", {"action": "pause", "tags": {"team": team}, "note": "freeze"}
    )
    assert status == 200 and paused["matched"] == 3, paused
    assert sorted(item["job_id"] for item in paused["items"]) == sorted(ids)
    assert all(item["job"]["pause"]["note"] == "freeze" for item in paused["items"])
    assert send(local_stack, "GET", f"/v1/jobs/{other}")[2]["status"] == "ACTIVE"
    _, _, cancelled = send(local_stack, "POST", "/v1/jobs/bulk", {"action": "cancel", "tags": {"team": team}})
    assert {item["job"]["status"] for item in cancelled["items"]} == {"CANCELLED"}
    status, _, refused = send(local_stack, "POST", "/v1/jobs/bulk", {"action": "pause", "tags": {}})
    assert status == 422 and refused["field"] == "tags"
    send(local_stack, "DELETE", f"/v1/jobs/{other}")


def test_given_a_paused_cron_when_resumed_then_its_history_has_a_row_for_what_did_not_run(
    local_stack: Api, receiver: Receiver
) -> None:
    body = {"schedule": {"cron": "*/10 * * * * *"}, "target": {"type": "http", "url": receiver.url + "/hist"}}
    status, _, job = send(local_stack, "POST", "/v1/jobs", body)
    assert status == 201, job
    path = f"/v1/jobs/{job['job_id']}"
    send(local_stack, "POST", path + "/pause", {"note": "nightly backup"})
    time.sleep(21)  # two occurrences at least fall due while paused
    send(local_stack, "POST", path + "/resume")
    status, _, page = send(local_stack, "GET", path + "/runs?reason=paused&limit=100")
    assert status == 200, page
    spans = [run for run in page["items"] if run["kind"] == "pause"]
    assert len(spans) == 1
    (span,) = spans
    assert (span["note"], span["by"], span["status"]) == ("nightly backup", "local", "SKIPPED")
    # The occurrences queued before the pause (the look-ahead) were skipped with the same reason, each
    # in its own row; the span counts those that had none: each occurrence of the pause once
    assert all(run["reason"] == "paused" for run in page["items"])
    own = [
        run
        for run in page["items"]
        if run["kind"] == "scheduled" and span["scheduled_for"] < run["scheduled_for"] < span["finished_at"]
    ]
    assert span["covers"] + len(own) >= 2
    status, _, refused = send(local_stack, "GET", path + "/runs?reason=bored")
    assert status == 422 and refused["field"] == "reason"
    send(local_stack, "DELETE", path)


def test_given_past_occurrences_when_backfilled_then_each_runs_once_oldest_first_marked_backfill(
    local_stack: Api, receiver: Receiver
) -> None:
    body = {
        "schedule": {"cron": "*/15 * * * *"},
        "target": {"type": "http", "url": receiver.url + "/backfill"},
    }
    status, _, job = send(local_stack, "POST", "/v1/jobs", body)
    assert status == 201, job
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=1)
    status, _, answer = send(
        local_stack, "POST", f"/v1/jobs/{job['job_id']}/backfill", {"from": iso(start), "to": iso(end)}
    )
    assert status == 202 and answer["count"] == 5, answer
    deliveries = receiver.wait_for("/backfill", 5, timeout=30)
    assert [d.headers["Punctual-Scheduled-For"] for d in deliveries] == answer["occurrences"]
    _, _, page = send(local_stack, "GET", f"/v1/jobs/{job['job_id']}/runs?limit=20")
    assert (
        sorted(r["scheduled_for"] for r in page["items"] if r["kind"] == "backfill") == answer["occurrences"]
    )
    send(local_stack, "DELETE", f"/v1/jobs/{job['job_id']}")


def test_given_a_run_still_under_way_when_the_next_falls_due_then_each_overlap_policy_holds(
    local_stack: Api,
) -> None:
    """Three 10-second crons whose first call takes 25 s: buffer_all runs the two that fell due
    meanwhile right after it, one after the other; buffer_one runs one of them and skips the other;
    cancel_other cancels the first (its call is aborted) and runs the next at once."""
    slow_first = 25.0

    def respond(path: str, nth: int) -> tuple[int, bytes]:
        if nth == 1:
            time.sleep(slow_first)
        return 200, b'{"ok": true}'

    with Receiver(respond) as receiver:
        jobs = {}
        for policy in ("buffer_all", "buffer_one", "cancel_other"):
            body = {
                "schedule": {"cron": "*/10 * * * * *", "overlap": policy},
                "target": {"type": "http", "url": f"{receiver.url}/{policy}"},
                "timeout_seconds": 60,
            }
            status, _, job = send(local_stack, "POST", "/v1/jobs", body)
            assert status == 201, job
            jobs[policy] = job
        buffered = receiver.wait_for("/buffer_all", 3, timeout=45)
        one_after = receiver.wait_for("/buffer_one", 2, timeout=30)[:2]
        cancelling = receiver.wait_for("/cancel_other", 2, timeout=30)[:2]

        def history(policy: str) -> list[dict[str, Any]]:
            _, _, page = send(local_stack, "GET", f"/v1/jobs/{jobs[policy]['job_id']}/runs?limit=50")
            return sorted(page["items"], key=lambda run: run["scheduled_for"])

        # buffer_all: the two that fell due during the first call ran right after it, in order
        buffered = buffered[:3]
        assert len(buffered) == 3, [d.scheduled_for for d in buffered]
        assert buffered[1].received_at - buffered[0].received_at >= slow_first - 0.5
        assert buffered[1].received_at - (buffered[0].received_at + slow_first) < 3, "woken at the end"
        runs = history("buffer_all")[:3]
        assert [r["run_id"] for r in runs] == [d.idempotency_key for d in buffered]
        assert runs[1]["overlap_with"] == runs[0]["run_id"] and runs[2]["overlap_with"] == runs[1]["run_id"]
        # buffer_one: the first, then the one that waited; the one after it was skipped for it
        first, waited, skipped = history("buffer_one")[:3]
        assert [first["run_id"], waited["run_id"]] == [d.idempotency_key for d in one_after]
        assert waited["overlap_with"] == first["run_id"] and waited["status"] == "SUCCEEDED"
        assert (skipped["status"], skipped["reason"], skipped["overlap_with"]) == (
            "SKIPPED",
            "overlap",
            waited["run_id"],
        )
        # cancel_other: the first run was cancelled for the second, which started at once
        cancelled, replacing = history("cancel_other")[:2]
        assert (cancelled["status"], cancelled["reason"]) == ("CANCELLED", "overlap")
        assert cancelled["overlap_with"] == replacing["run_id"] == cancelling[1].idempotency_key
        late = cancelling[1].received_at - parse_iso(cancelling[1].scheduled_for).timestamp()
        assert 0 <= late < 3, "it waited only for the cancelled call to be aborted"
        for job in jobs.values():
            send(local_stack, "DELETE", f"/v1/jobs/{job['job_id']}")


def test_given_max_runs_and_on_complete_delete_when_the_runs_are_made_then_the_job_ends_and_will_go(
    local_stack: Api, receiver: Receiver
) -> None:
    body = {
        "schedule": {"cron": "*/10 * * * * *"},
        "target": {"type": "http", "url": receiver.url + "/limited"},
        "max_runs": 2,
        "on_complete": "delete",
        "delete_after_days": 1,
    }
    status, _, job = send(local_stack, "POST", "/v1/jobs", body)
    assert status == 201, job
    assert (job["max_runs"], job["remaining_runs"], len(job["upcoming"])) == (2, 2, 2)
    deliveries = receiver.wait_for("/limited", 2, timeout=30)
    time.sleep(12)  # the occurrence after the second: nothing comes
    assert len(receiver.for_path("/limited")) == 2
    _, _, ended = send(local_stack, "GET", f"/v1/jobs/{job['job_id']}")
    assert (ended["status"], ended["remaining_runs"], ended["next_run_at"]) == ("COMPLETED", 0, None)
    deletes_at = parse_iso(ended["deletes_at"]).timestamp()
    assert 0 < deletes_at - deliveries[1].received_at <= 24 * 3600 + 30, "a day after its end"
    status, _, refused = send(
        local_stack,
        "POST",
        "/v1/jobs",
        {**body, "schedule": {"at": iso(datetime.now(UTC) + timedelta(minutes=5))}},
    )
    assert status == 422 and refused["field"] == "max_runs"


def test_given_alerts_when_a_run_fails_or_runs_long_then_a_signed_alert_arrives_once(
    local_stack: Api,
) -> None:
    def respond(path: str, nth: int) -> tuple[int, bytes]:
        if path == "/slow":
            time.sleep(3)
        return (404 if path == "/broken" else 200), b"{}"

    secret = "alerts-secret-0123"
    with Receiver(respond) as receiver:
        due = iso(datetime.now(UTC) + timedelta(seconds=3))
        alerts = {
            "target": {"type": "http", "url": receiver.url + "/alerts"},
            "failed": True,
            "running_seconds": 1,
        }
        jobs = []
        for path in ("/broken", "/slow"):
            body = {
                "schedule": {"at": due},
                "target": {"type": "http", "url": receiver.url + path},
                "retry": {"max_attempts": 1},
                "signing_secret": secret,
                "alerts": alerts,
            }
            status, _, job = send(local_stack, "POST", "/v1/jobs", body)
            assert status == 201 and job["alerts"]["failed"] is True, job
            jobs.append(job)
        received = receiver.wait_for("/alerts", 2, timeout=30)
        time.sleep(2)  # nothing more: once per run and kind
        assert len(receiver.for_path("/alerts")) == 2
        by_kind = {d.headers["Punctual-Alert"]: d for d in received}
        assert set(by_kind) == {"failed", "running_long"}
        for kind, job in (("failed", jobs[0]), ("running_long", jobs[1])):
            alert = by_kind[kind]
            assert verify(secret, alert.headers["Punctual-Signature"], alert.body)
            assert alert.json["job_id"] == job["job_id"] and alert.json["alert"] == kind
            assert alert.idempotency_key == f"{alert.json['run_id']}.alert-{kind}"
        assert by_kind["failed"].json["detail"] == "HTTP 404"
