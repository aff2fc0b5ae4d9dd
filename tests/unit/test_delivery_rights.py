"""Delivery rights (punctual_functions/core/rights.py): a job delivers only where its owner may, checked
when the job is made and again before each call, on the in-memory fakes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from punctual_functions.api.errors import Forbidden, InvalidInput
from punctual_functions.api.requests import PatchJobIn
from punctual_functions.core.model import RunStatus
from punctual_functions.core.rights import DeliveryRight, DeliveryRights, RightsError, RightsReader
from punctual_functions.core.settings import Settings
from punctual_functions.core.targets.rights import delivery_refusal
from tests.conftest import Clock
from tests.unit.test_engine_on_fakes import SETTINGS, Engine, engine_with

ACCOUNT = "123456789012"
ALICE = f"arn:aws:iam::{ACCOUNT}:role/alice"
BOB = f"arn:aws:iam::{ACCOUNT}:role/bob"
ALICE_QUEUE = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/alice-reports"
BOB_QUEUE = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/bob-reports"
RIGHTS = DeliveryRights(
    rights=(
        DeliveryRight(owners=(ALICE,), targets=(f"arn:aws:sqs:*:{ACCOUNT}:alice-*", "nightly")),
        DeliveryRight(owners=(BOB,), targets=(f"arn:aws:sqs:*:{ACCOUNT}:bob-*",), hosts=("*.bob.example",)),
    )
)
FENCED = SETTINGS.replace(allowed_target_arns=("*",), account_id=ACCOUNT)


class Reader(RightsReader):
    """The rights as given, read again at every check."""

    def __init__(self, rights: DeliveryRights, clock: Clock) -> None:
        super().__init__(lambda: rights, clock, max_age_seconds=0.0)


def sqs(url: str) -> dict[str, str]:
    return {"type": "sqs", "queue_url": url}


# ------------------------------------------------------------------------------------ the rules


def test_an_owner_may_deliver_only_where_one_of_its_rights_names_the_target(clock: Clock) -> None:
    reader = Reader(RIGHTS, clock)
    assert delivery_refusal(reader, ALICE, sqs(ALICE_QUEUE), FENCED) is None
    refusal = delivery_refusal(reader, ALICE, sqs(BOB_QUEUE), FENCED)
    assert refusal is not None
    assert f"arn:aws:sqs:us-east-1:{ACCOUNT}:bob-reports" in refusal, "names the target"
    assert f"arn:aws:sqs:*:{ACCOUNT}:alice-*" in refusal, "names the rights it has"
    assert "bob-*" not in refusal, "never another owner's rights"
    none = delivery_refusal(reader, "arn:aws:iam::999999999999:role/mallory", sqs(ALICE_QUEUE), FENCED)
    assert none is not None and "gives it none" in none


def test_a_bare_function_name_is_matched_as_given_and_as_its_arn(clock: Clock) -> None:
    reader = Reader(RIGHTS, clock)
    assert delivery_refusal(reader, ALICE, {"type": "lambda", "function": "nightly"}, FENCED) is None
    by_arn = Reader(
        DeliveryRights.for_every_owner((f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:n*",)), clock
    )
    assert delivery_refusal(by_arn, BOB, {"type": "lambda", "function": "nightly"}, FENCED) is None
    assert delivery_refusal(by_arn, BOB, {"type": "lambda", "function": "other"}, FENCED) is not None


def test_webhook_hosts_are_per_owner_only_when_the_deployment_says_so(clock: Clock) -> None:
    hook = {"type": "http", "url": "https://hooks.bob.example/run"}
    assert delivery_refusal(Reader(RIGHTS, clock), ALICE, hook, FENCED) is None, "any host by default"
    per_owner = Reader(DeliveryRights(rights=RIGHTS.rights, hosts_per_owner=True), clock)
    assert delivery_refusal(per_owner, BOB, hook, FENCED) is None
    refusal = delivery_refusal(per_owner, ALICE, hook, FENCED)
    assert refusal is not None and "hooks.bob.example" in refusal


def test_owner_patterns_and_every_owner() -> None:
    rights = DeliveryRights.from_value(
        [{"owners": [f"arn:aws:iam::{ACCOUNT}:role/team-*"], "targets": ["arn:aws:sns:*"]}]
    )
    assert rights.allows_resource(f"arn:aws:iam::{ACCOUNT}:role/team-a", ["arn:aws:sns:us-east-1:1:t"])
    assert not rights.allows_resource(f"arn:aws:iam::{ACCOUNT}:role/other", ["arn:aws:sns:us-east-1:1:t"])
    assert DeliveryRights.for_every_owner().allows_resource("anyone", ["arn:aws:sqs:x"])
    assert not DeliveryRights().allows_resource("anyone", ["arn:aws:sqs:x"]), "none written: none given"


def test_the_deployment_mode_lets_the_allow_list_alone_decide(clock: Clock) -> None:
    one_team = FENCED.replace(delivery_rights_mode="deployment")
    assert delivery_refusal(Reader(DeliveryRights(), clock), BOB, sqs(ALICE_QUEUE), one_team) is None


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("[1]", "delivery_rights.rights[0]"),
        ('[{"targets": ["*"]}]', "delivery_rights.rights[0].owners"),
        ('[{"owners": [], "targets": ["*"]}]', "delivery_rights.rights[0].owners"),
        ('[{"owners": ["a"]}]', "delivery_rights.rights[0]"),
        ('[{"owners": ["a"], "targets": [""]}]', "delivery_rights.rights[0].targets"),
        ('[{"owners": ["a"], "hosts": ["https://x.example/"]}]', "delivery_rights.rights[0].hosts"),
        ('[{"owners": ["a"], "targets": ["*"], "role": "x"}]', "delivery_rights.rights[0]"),
        ('{"rights": [], "hosts_per_owner": "yes"}', "delivery_rights.hosts_per_owner"),
        ('{"grants": []}', "delivery_rights"),
        ("{nope", "delivery_rights"),
    ],
)
def test_rights_that_cannot_be_read_are_refused_naming_the_field(value: str, field: str) -> None:
    with pytest.raises(RightsError) as refused:
        DeliveryRights.from_json(value)
    assert refused.value.field == field and refused.value.reason


def test_rights_survive_their_json() -> None:
    again = DeliveryRights.from_json(DeliveryRights(RIGHTS.rights, hosts_per_owner=True).to_json())
    assert again == DeliveryRights(RIGHTS.rights, hosts_per_owner=True)


class Seconds:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def test_a_right_given_is_seen_at_once_and_one_withdrawn_within_a_minute() -> None:
    stored, seconds = [DeliveryRights()], Seconds()
    reader = RightsReader(lambda: stored[0], seconds)
    assert not reader.allows_resource(ALICE, ["arn:aws:sqs:q"])
    stored[0] = DeliveryRights.for_every_owner()
    seconds.now += 1
    assert reader.allows_resource(ALICE, ["arn:aws:sqs:q"]), "a refusal reads the item again first"
    stored[0] = DeliveryRights()
    seconds.now += 30
    assert reader.allows_resource(ALICE, ["arn:aws:sqs:q"]), "the copy holds for a minute"
    seconds.now += 30
    assert not reader.allows_resource(ALICE, ["arn:aws:sqs:q"])


# -------------------------------------------------------------------------- the API, on the fakes


@pytest.fixture
def engine(clock: Clock) -> Engine:
    engine = engine_with(FENCED, clock)
    engine.store.put_delivery_rights(RIGHTS)
    engine.owner = ALICE
    return engine


def at(engine: Engine, seconds: int = 5) -> dict[str, str]:
    return {"at": (engine.clock() + timedelta(seconds=seconds)).isoformat()}


def test_a_job_to_a_target_its_owner_has_no_right_to_is_refused_and_nothing_is_written(
    engine: Engine,
) -> None:
    with pytest.raises(Forbidden) as refused:
        engine.create(schedule=at(engine), target=sqs(BOB_QUEUE))
    assert refused.value.field == "target.queue_url" and "bob-reports" in refused.value.reason
    assert engine.store.jobs == {} and engine.queue.sent == []
    job = engine.create(schedule=at(engine), target=sqs(ALICE_QUEUE))
    assert job["target"]["queue_url"] == ALICE_QUEUE


def test_a_change_to_a_target_its_owner_has_no_right_to_is_refused(engine: Engine) -> None:
    job = engine.create(schedule={"cron": "0 3 * * *"}, target=sqs(ALICE_QUEUE))
    with pytest.raises(Forbidden) as refused:
        engine.service.patch_job(ALICE, job["job_id"], PatchJobIn.model_validate({"target": sqs(BOB_QUEUE)}))
    assert refused.value.field == "target.queue_url"
    assert engine.job(job["job_id"]).target["queue_url"] == ALICE_QUEUE, "unchanged"


def test_an_alerts_topic_and_a_dead_letter_queue_need_a_right_too(engine: Engine) -> None:
    topic = f"arn:aws:sns:us-east-1:{ACCOUNT}:bob-alerts"
    with pytest.raises(Forbidden) as alerts:
        engine.create(
            schedule=at(engine),
            target=sqs(ALICE_QUEUE),
            alerts={"target": {"type": "sns", "topic_arn": topic}, "failed": True},
        )
    assert alerts.value.field == "alerts.target.topic_arn"
    with pytest.raises(Forbidden) as dead_letter:
        engine.create(schedule=at(engine), target=sqs(ALICE_QUEUE), dead_letter=sqs(BOB_QUEUE))
    assert dead_letter.value.field == "dead_letter.queue_url"


def test_the_allow_list_is_still_the_outer_fence(engine: Engine, clock: Clock) -> None:
    fenced = engine_with(FENCED.replace(allowed_target_arns=(f"arn:aws:sqs:*:{ACCOUNT}:bob-*",)), clock)
    fenced.store.put_delivery_rights(DeliveryRights.for_every_owner())
    with pytest.raises(InvalidInput) as refused:
        fenced.create(schedule=at(fenced), target=sqs(ALICE_QUEUE))
    assert refused.value.field == "target.queue_url", "a right inside no fence gives nothing"


# ------------------------------------------------------------------------ the worker, at each call


def test_a_right_withdrawn_after_the_create_fails_the_run_without_a_call_or_a_retry(engine: Engine) -> None:
    job = engine.create(
        schedule=at(engine),
        target=sqs(ALICE_QUEUE),
        retry={"max_attempts": 5, "backoff_seconds": 1},
    )
    engine.store.put_delivery_rights(DeliveryRights(rights=RIGHTS.rights[1:]))  # alice's withdrawn
    engine.clock.advance(61)  # the worker's copy of the rights is a minute old by then
    engine.deliver_all()
    engine.clock.advance(120)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.FAILED and len(run.attempts) == 1, "never retried"
    assert run.error is not None and run.error.startswith("delivery refused: owner " + ALICE)
    assert engine.targets.deliveries == [], "the target was never called"


def test_a_deployment_for_one_team_delivers_without_rights(clock: Clock) -> None:
    engine = engine_with(FENCED.replace(delivery_rights_mode="deployment"), clock)
    job = engine.create(schedule=at(engine), target=sqs(BOB_QUEUE))
    engine.clock.advance(5)
    engine.deliver_all()
    (run,) = engine.store.runs[job["job_id"]].values()
    assert run.status is RunStatus.SUCCEEDED and len(engine.targets.deliveries) == 1


def test_settings_name_the_two_modes() -> None:
    assert Settings().delivery_rights_mode == "owner", "per owner unless a deployment says otherwise"
    with pytest.raises(ValueError, match="delivery_rights_mode"):
        Settings(delivery_rights_mode="nobody")
