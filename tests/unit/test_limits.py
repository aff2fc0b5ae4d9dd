"""The pure rules of target limits: matching, slots, the token bucket, the wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from punctual_functions.core.limits import (
    Bucket,
    Limit,
    LimitMatchError,
    Place,
    Slot,
    TokenRefused,
    TokenTaken,
    Waiter,
    any_handed,
    check_match,
    choose_slot,
    hand_over_places,
    handed_holder,
    handed_to,
    in_turn,
    in_use,
    matches,
    matching,
    refill,
    retry_in,
    take_token,
)

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
LEASE = NOW + timedelta(minutes=1)


def http(url: str) -> dict[str, str]:
    return {"type": "http", "url": url, "method": "POST"}


@pytest.mark.parametrize(
    ("prefix", "url", "expected"),
    [
        ("https://api.example.com", "https://api.example.com/hook", True),
        ("https://api.example.com", "https://API.example.com:443/", True),
        ("https://api.example.com", "http://api.example.com/hook", False),
        ("https://api.example.com", "https://api.example.com.evil.test/hook", False),
        ("https://api.example.com", "https://api.example.com:8443/hook", False),
        ("https://api.example.com/v1", "https://api.example.com/v1", True),
        ("https://api.example.com/v1", "https://api.example.com/v1/jobs?x=1", True),
        ("https://api.example.com/v1", "https://api.example.com/v10/jobs", False),
        ("https://api.example.com/v1/", "https://api.example.com/v1/jobs", True),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000/x", True),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9001/x", False),
    ],
)
def test_a_url_prefix_matches_on_scheme_host_port_and_path_boundaries(
    prefix: str, url: str, expected: bool
) -> None:
    assert matches(check_match(prefix), http(url)) is expected


def test_an_arn_matches_exactly_with_a_qualifier_or_as_a_prefix() -> None:
    fn = "arn:aws:lambda:eu-west-1:123456789012:function:f"
    assert matches(fn, {"type": "lambda", "function": fn})
    assert matches(fn, {"type": "lambda", "function": fn + ":live"})
    assert not matches(fn, {"type": "lambda", "function": fn + "2"})
    assert matches(
        "arn:aws:sns:eu-west-1:123456789012:*",
        {"type": "sns", "topic_arn": "arn:aws:sns:eu-west-1:123456789012:t"},
    )
    assert not matches(fn, http("https://example.com"))
    assert matches(
        "https://sqs.eu-west-1.amazonaws.com/123456789012",
        {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/q"},
    )


@pytest.mark.parametrize(
    "bad", ["ftp://example.com", "example.com", "https://", "https://h/p?q=1", "arn:aws:*:x", "arn::"]
)
def test_a_match_that_is_neither_a_url_prefix_nor_an_arn_is_refused(bad: str) -> None:
    with pytest.raises(LimitMatchError):
        check_match(bad)


def test_matching_limits_come_by_name() -> None:
    limits = [
        Limit("b", "https://example.com"),
        Limit("a", "https://example.com/v1"),
        Limit("c", "https://other.test"),
    ]
    assert [limit.name for limit in matching(limits, http("https://example.com/v1/x"))] == ["a", "b"]


def slot(index: int, holder: str, seconds: float) -> Slot:
    return Slot(index, holder, NOW + timedelta(seconds=seconds))


def test_a_slot_is_free_lapsed_or_the_holders_own() -> None:
    held = [slot(0, "r0", 10), slot(1, "r1", 10)]
    assert choose_slot(held, 2, "r9", NOW) is None
    assert choose_slot(held, 2, "r1", NOW) == 1  # its own: a retake
    assert choose_slot([slot(0, "r0", 10), slot(1, "r1", -1)], 2, "r9", NOW) == 1  # lapsed
    assert choose_slot([], 3, "r9", NOW) in {0, 1, 2}
    assert len(in_use([slot(0, "a", 1), slot(1, "b", -1)], NOW)) == 1


def test_a_lowered_limit_counts_the_slots_held_beyond_it() -> None:
    assert choose_slot([slot(5, "r5", 10)], 1, "r9", NOW) is None


def test_the_bucket_refills_at_its_rate_up_to_its_size() -> None:
    assert refill(None, NOW, 2.0, 5) == Bucket(5.0, NOW)
    assert refill(Bucket(0.0, NOW), NOW + timedelta(seconds=1), 2.0, 5).tokens == 2.0
    assert refill(Bucket(0.0, NOW), NOW + timedelta(seconds=10), 2.0, 5).tokens == 5.0
    assert refill(Bucket(1.0, NOW), NOW - timedelta(seconds=3), 2.0, 5).tokens == 1.0


def test_a_token_is_taken_or_the_wait_for_the_next_is_told() -> None:
    taken = take_token(Bucket(1.5, NOW), NOW, 1.0, 3)
    assert isinstance(taken, TokenTaken) and taken.bucket.tokens == 0.5
    refused = take_token(Bucket(0.5, NOW), NOW, 2.0, 3)
    assert isinstance(refused, TokenRefused) and refused.wait_seconds == 0.25


def test_a_refused_run_comes_back_within_seconds() -> None:
    # A released slot is handed over and wakes its run: its own return is the fallback.
    assert retry_in(timedelta(0), 0.0) == 10
    assert retry_in(timedelta(minutes=5), 0.99) == 20
    assert retry_in(timedelta(0), 0.0, 3.2) == 4  # the bucket's next token
    assert retry_in(timedelta(0), 0.5, 0.1) == 2


def test_a_release_hands_slots_to_the_longest_waiting_runs_as_far_as_the_limit_has_room() -> None:
    later = NOW + timedelta(seconds=3)
    waiting = [Waiter("j", "late", later), Waiter("j", "mine", NOW), Waiter("j", "first", NOW)]
    assert [w.run_id for w in in_turn(waiting, "mine/t1")] == ["first", "late"], "never the releasing run"
    slots = [Slot(0, "mine/t1", LEASE), Slot(1, "other/t2", LEASE), Slot(2, "dead/t3", NOW)]
    # Its own slot first, then the lapsed and the never-taken ones the limit has room for.
    assert hand_over_places(slots, 4, "mine/t1", NOW) == [
        Place(0, slots[0]),
        Place(2, slots[2]),
        Place(3, None),
    ]
    assert hand_over_places(slots, 2, "mine/t1", NOW) == [Place(0, slots[0])]
    assert hand_over_places(slots, 1, "mine/t1", NOW) == [], "a lowered limit frees it"
    assert hand_over_places(slots, None, "mine/t1", NOW) == [], "a limit without slots (or gone)"
    assert hand_over_places(slots, 4, any_handed("x"), NOW) == [], "nothing handed to x to pass on"


def test_a_slot_handed_to_a_run_is_claimed_by_any_delivery_of_it_until_its_handoff_ends() -> None:
    handed = Slot(3, handed_holder("r1", "x"), NOW + timedelta(seconds=5))
    assert handed.handed and handed.run_id == "r1"
    assert not Slot(0, "r1/abc", LEASE).handed
    assert handed_to([handed], "r1/any-token", NOW) == handed
    assert handed_to([handed], "r2/any-token", NOW) is None
    assert handed_to([handed], "r1/any-token", NOW + timedelta(seconds=5)) is None, "lapsed: free"


def test_releases_at_once_start_at_different_places_among_the_first_in_line() -> None:
    line = [Waiter("j", f"r{n}", NOW + timedelta(seconds=n)) for n in range(6)]
    starts = {in_turn(line, f"h{n}/t", 3)[0].run_id for n in range(40)}
    assert starts == {"r0", "r1", "r2"}
    for n in range(10):
        order = [waiter.run_id for waiter in in_turn(line, f"h{n}/t", 3)]
        assert sorted(order[:3]) == ["r0", "r1", "r2"] and order[3:] == ["r3", "r4", "r5"]
    assert [w.run_id for w in in_turn(line, "h/t")] == [f"r{n}" for n in range(6)], "one slot: in order"
