"""``AllowedTargets``: the settings' patterns and the deployment's item, the item re-read when it is
old or when a target is missing from it, never more often than that (a clock-driven test)."""

from __future__ import annotations

from punctual_functions.core.allow_list import MAX_AGE_SECONDS, REFRESH_ON_MISS_SECONDS, AllowedTargets
from punctual_functions.core.clock import SystemClock

QUEUE = "arn:aws:sqs:eu-west-1:123456789012:reports"
OTHER = "arn:aws:sqs:eu-west-1:123456789012:billing"


class Ticking(SystemClock):
    def __init__(self) -> None:
        self.at = 1000.0

    def monotonic(self) -> float:
        return self.at


class Item:
    """The deployment's item, counting its reads."""

    def __init__(self, *patterns: str) -> None:
        self.patterns = patterns
        self.reads = 0

    def __call__(self) -> tuple[str, ...]:
        self.reads += 1
        return self.patterns


def test_the_settings_patterns_allow_without_reading_the_item() -> None:
    item = Item()
    allowed = AllowedTargets(["arn:aws:sqs:*:*:reports*"], item, Ticking())
    assert allowed.allows([QUEUE])
    assert item.reads == 0


def test_the_item_is_read_once_and_kept_while_it_allows() -> None:
    clock, item = Ticking(), Item(QUEUE)
    allowed = AllowedTargets([], item, clock)
    for _ in range(100):
        assert allowed.allows(["https://sqs/whatever", QUEUE])
        clock.at += 0.5
    assert item.reads == 1 + int(50 // MAX_AGE_SECONDS)


def test_a_target_the_deploy_just_allowed_is_read_again_before_it_is_refused() -> None:
    clock, item = Ticking(), Item(QUEUE)
    allowed = AllowedTargets([], item, clock)
    assert allowed.allows([QUEUE])
    item.patterns = (QUEUE, OTHER)  # a deploy adds a target
    clock.at += REFRESH_ON_MISS_SECONDS
    assert allowed.allows([OTHER])
    assert item.reads == 2


def test_refused_targets_read_the_item_at_most_once_a_second() -> None:
    clock, item = Ticking(), Item(QUEUE)
    allowed = AllowedTargets([], item, clock)
    for _ in range(50):
        assert not allowed.allows([OTHER])
        clock.at += 0.1
    assert item.reads == 5


def test_a_target_removed_from_the_item_is_refused_once_the_copy_is_old() -> None:
    clock, item = Ticking(), Item(QUEUE)
    allowed = AllowedTargets([], item, clock)
    assert allowed.allows([QUEUE])
    item.patterns = ()
    clock.at += MAX_AGE_SECONDS - 1
    assert allowed.allows([QUEUE])
    clock.at += 1
    assert not allowed.allows([QUEUE])
