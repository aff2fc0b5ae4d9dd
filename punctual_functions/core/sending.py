"""Sending work messages: ten to a request, each group of a sweep at its moment (``pacing.plan``).

Every request's delays are computed from the clock as it is made, so a request that comes later than
planned makes its messages arrive early, never late (docs/architecture.md, "Arrival").
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from punctual_functions.core import pacing
from punctual_functions.core.clock import SYSTEM_CLOCK, Clock
from punctual_functions.core.observability import logger
from punctual_functions.core.ports import Queue
from punctual_functions.core.queue import WorkMessage

# A group of messages due to be sent at one moment goes out this many requests at a time.
SEND_THREADS = 8
# The share of its measured rate (SEND_THREADS requests of ten each request's duration) a sweep plans
# to send in a second: a second's messages are spread over many moments, so its threads are rarely all
# busy.
PLANNED_SHARE = 0.5

Outgoing = tuple[WorkMessage, datetime]  # a message and the moment its run is due


class Sender:
    def __init__(
        self,
        queue: Queue,
        head_start: timedelta,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.queue = queue
        self.head_start = head_start
        self.clock = clock
        # How long a SendMessageBatch takes, a running estimate (``_request``).
        self._request_time = timedelta(milliseconds=20)
        # Messages planned for each second (epoch second -> count) by the paced sends under way: the
        # sweeps of several shards send through one sender, and share its rate.
        self._booked: dict[int, int] = {}
        self._booking = threading.Lock()

    def send(self, outgoing: list[Outgoing], *, paced: bool) -> None:
        """Send the messages. Paced (the sweep): each group at the moment that makes its messages
        visible ``head_start`` before their runs are due; otherwise at once."""
        groups = self._plan(outgoing) if paced else [pacing.Group(self.clock(), outgoing)]
        for group in groups:
            # Ten to a request, in due-time order: each message has its own delay, so the runs of a
            # group's due times share requests (the crons of a minute due on whole seconds are one
            # group: a request per ten, not per second), and the runs due at one moment stay
            # together, to become visible and reach the worker together.
            ordered = sorted(group.items, key=lambda item: item[1])
            requests = [ordered[start : start + 10] for start in range(0, len(ordered), 10)]
            # Every request of a group must be made by its moment (made later, its delays would be a
            # second shorter): a large group (the crons of one second, whole-second one-offs) goes
            # SEND_THREADS requests at a time, starting early enough for its last round.
            rounds = -(-len(requests) // SEND_THREADS)
            wait = (group.at - self._request_time * (rounds - 1) - self.clock()).total_seconds()
            if wait > 0:
                self.clock.sleep(wait)
            self.clock.parallel(self._request, requests, SEND_THREADS, "send")

    def _plan(self, outgoing: list[Outgoing]) -> list[pacing.Group[Outgoing]]:
        """The paced plan of ``outgoing``, counting the seconds other sends under way have booked."""
        with self._booking:
            now = self.clock()
            second = int(now.timestamp())
            self._booked = {s: n for s, n in self._booked.items() if s >= second}
            booked = [self._booked.get(second + k, 0) for k in range(pacing.MAX_SPREAD_SECONDS + 1)]
            groups = pacing.plan(
                outgoing,
                [fire_at for _message, fire_at in outgoing],
                now,
                self.head_start,
                per_second=self.per_second(),
                booked=booked,
            )
            for k, count in enumerate(booked):
                if count:
                    self._booked[second + k] = count
            return groups

    def per_second(self) -> int:
        """How many messages a paced send plans to a second, from the measured duration of a request."""
        rate = SEND_THREADS * 10 / max(self._request_time.total_seconds(), 0.001)
        return max(10, int(rate * PLANNED_SHARE))

    def _request(self, messages: list[Outgoing]) -> None:
        """One ``SendMessageBatch``, its delays computed as it is made; its duration feeds the
        estimate that times a large group's start."""
        began = self.clock()
        self.queue.send(
            [(message, pacing.delay_for(fire_at, began, self.head_start)) for message, fire_at in messages]
        )
        took = min(self.clock() - began, timedelta(seconds=0.2))
        self._request_time = (self._request_time * 3 + took) / 4
        # One line a request (up to ten runs), not one a run: log lines are billed by the byte, and
        # Powertools adds ~300 bytes of its own keys to each. Greppable by run id.
        logger.info(
            "runs dispatched",
            extra={
                "count": len(messages),
                "runs": " ".join(f"{message.job_id}/{message.run_id}" for message, _fire_at in messages),
            },
        )
