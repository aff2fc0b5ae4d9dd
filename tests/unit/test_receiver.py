"""The test and benchmark receiver stamps a delivery when its first bytes reached the socket."""

from __future__ import annotations

import socket
import sys
import time

import pytest

from punctual.testing.receiver import Receiver


def _port(receiver: Receiver) -> int:
    return int(receiver.url.rsplit(":", 1)[1])


def _answer(client: socket.socket) -> bytes:
    """The whole answer (status, headers and the receiver's short body may come in several reads)."""
    answer = b""
    while not answer.endswith(b"}"):
        answer += client.recv(4096)
    return answer


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's receive times are Linux's")
def test_given_a_request_whose_headers_come_later_when_received_then_its_arrival_is_its_first_bytes() -> None:
    with Receiver() as receiver, socket.create_connection(("127.0.0.1", _port(receiver))) as client:
        first = time.time()
        client.sendall(b"POST /slow HTTP/1.1\r\n")
        time.sleep(0.2)
        client.sendall(b"Host: x\r\nContent-Length: 2\r\n\r\n{}")
        assert _answer(client).startswith(b"HTTP/1.1 200")
        (delivery,) = receiver.wait_for("/slow", 1, timeout=5)
    assert first <= delivery.received_at < first + 0.1
    assert delivery.handled_at >= first + 0.2


def test_given_requests_on_one_connection_when_received_then_each_is_stamped_in_order() -> None:
    with Receiver() as receiver, socket.create_connection(("127.0.0.1", _port(receiver))) as client:
        sent = []
        for _ in range(3):
            sent.append(time.time())
            client.sendall(b"POST /again HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            assert _answer(client).startswith(b"HTTP/1.1 200")
            time.sleep(0.05)
        deliveries = receiver.wait_for("/again", 3, timeout=5)
    for at, delivery in zip(sent, deliveries, strict=True):
        assert at <= delivery.received_at <= delivery.handled_at < at + 0.05
