"""One local role (api, dispatcher or worker) that also records what it costs, for the cost benchmark.

It runs the real role (``punctual.local.role``) with two additions, both outside the engine's code:

- every AWS call the process makes is recorded through botocore (``BaseClient._make_api_call``):
  the operation, whether it was made inside a handler invocation or by the local event source
  mapping around it (the SQS poller), the keys written and the read units of the answer (computed
  from the item sizes), and for the api which job the create was for (its target's path);
- every DynamoDB request asks for ``ReturnConsumedCapacity=TOTAL`` (a botocore
  ``provide-client-params`` hook) and the ``ConsumedCapacity`` of the answer is recorded
  (``after-call``) as the service reported it, next to the computed units;
- each handler invocation is timed (the duration Lambda would bill), with its batch size or summary.

One JSON object per line goes to ``--events FILE``; the benchmark reads them by time window.

    python -m bench.timed_role worker --events worker.jsonl --pollers 4 --name worker-1
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from punctual.scale.sizes import item_size

_local = threading.local()
_lock = threading.Lock()


class _State:
    out: TextIO | None = None
    role = ""
    # The api serves one request at a time: its tag holds for every thread the request starts (a
    # batch's creates, a dispatch's writes), not only the handler's own.
    tag: str | None = None


_state = _State()

# CPU seconds this process spends on what a Lambda function would not: this module's own records of
# each call (item sizes, a JSON line) and the local event source mapping's requests (on AWS the
# mapping polls and deletes, not the function). Thread CPU, summed over all threads: the benchmark
# takes it off the process's CPU over an invocation (``overhead_start``/``overhead_end``).
_overhead = [0.0]


def _add_overhead(seconds: float) -> None:
    with _lock:
        _overhead[0] += seconds


def overhead_seconds() -> float:
    with _lock:
        return _overhead[0]


# Threads that only ever run inside a handler invocation: the records of a worker batch, the
# heartbeat of a running attempt, a target's call, the dispatcher's per-shard sweeps, its groups of
# shards and its concurrent dispatches.
_HANDLER_THREADS = (
    "record",
    "heartbeat-",
    "punctual-target",
    "sweep",
    "group",
    "fanout",
    "dispatch",
    "create",
)


def _emit(event: dict[str, Any]) -> None:
    line = json.dumps(event, separators=(",", ":"))
    with _lock:
        assert _state.out is not None
        _state.out.write(line + "\n")
        _state.out.flush()


def _context() -> str:
    if getattr(_local, "in_handler", False):
        return "handler"
    name = threading.current_thread().name
    return "handler" if name.startswith(_HANDLER_THREADS) else "outside"


# ------------------------------------------------------------------------------- DynamoDB sizes


def _key(item: Mapping[str, Any]) -> list[str]:
    return [str(item.get("pk", {}).get("S", "")), str(item.get("sk", {}).get("S", ""))]


def _read_units(sizes: list[int], consistent: bool, transactional: bool = False) -> float:
    """Read request units of one read: per 4 KB, halved when eventually consistent."""
    units = max(1, math.ceil(sum(sizes) / 4096)) if sizes else 1
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


def _dynamodb_details(operation: str, params: Mapping[str, Any], response: Any) -> dict[str, Any]:
    """Which items a write touched (key, action, size when the request holds the whole item) and
    the read request units of a read (sizes taken from the answer)."""
    writes: list[list[Any]] = []
    rru = 0.0
    if operation == "PutItem":
        writes.append([*_key(params["Item"]), "put", item_size(params["Item"])])
    elif operation in ("UpdateItem", "DeleteItem"):
        writes.append([*_key(params["Key"]), operation[:-4].lower(), None])
    elif operation == "TransactWriteItems":
        for entry in params["TransactItems"]:
            (action, body), *_ = entry.items()
            if action == "Put":
                writes.append([*_key(body["Item"]), "put", item_size(body["Item"])])
            else:
                writes.append([*_key(body["Key"]), action.lower(), None])
    elif operation == "BatchWriteItem":
        for requests in params["RequestItems"].values():
            for request in requests:
                if "PutRequest" in request:
                    item = request["PutRequest"]["Item"]
                    writes.append([*_key(item), "put", item_size(item)])
                else:
                    writes.append([*_key(request["DeleteRequest"]["Key"]), "delete", None])
    elif operation == "GetItem" and response is not None:
        item = response.get("Item")
        rru = _read_units([item_size(item)] if item else [], bool(params.get("ConsistentRead")))
    elif operation == "BatchGetItem" and response is not None:
        for table, spec in params["RequestItems"].items():
            consistent = bool(spec.get("ConsistentRead"))
            for item in response.get("Responses", {}).get(table, []):
                rru += _read_units([item_size(item)], consistent)
            found = len(response.get("Responses", {}).get(table, []))
            rru += (len(spec["Keys"]) - found) * _read_units([], consistent)  # a miss costs too
    elif operation in ("Query", "Scan") and response is not None:
        rru = _read_units(
            [item_size(i) for i in response.get("Items", [])], bool(params.get("ConsistentRead"))
        )
    elif operation == "TransactGetItems" and response is not None:
        for item in response.get("Responses", []):
            rru += _read_units([item_size(item.get("Item") or {})], True, transactional=True)
    return {"writes": writes, "rru": rru} if writes or rru else {}


# ---------------------------------------------------------------------------- consumed capacity

# DynamoDB operations that read; every other one that reports consumed capacity writes.
_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})


def _ask_for_capacity(params: dict[str, Any], model: Any, **_kwargs: Any) -> dict[str, Any] | None:
    """``provide-client-params.dynamodb``: ask for the consumed capacity wherever the operation can
    return it (the answer carries it; nothing else about the request changes)."""
    accepted = model.input_shape.members if model.input_shape is not None else {}
    if "ReturnConsumedCapacity" in accepted and "ReturnConsumedCapacity" not in params:
        return {**params, "ReturnConsumedCapacity": "TOTAL"}
    return None


def _note_capacity(parsed: Mapping[str, Any], model: Any, **_kwargs: Any) -> None:
    """``after-call.dynamodb``: what the answer says the request consumed, for the call record."""
    _local.consumed = reported_capacity(model.name, parsed.get("ConsumedCapacity"))


def reported_capacity(operation: str, consumed: Any) -> dict[str, float] | None:
    """Read and write capacity units from a ``ConsumedCapacity`` (one entry, or one per table);
    None when the answer has none. ``CapacityUnits`` alone counts as read or write by the operation."""
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    if not entries:
        return None
    read = write = 0.0
    for entry in entries:
        if "ReadCapacityUnits" in entry or "WriteCapacityUnits" in entry:
            read += float(entry.get("ReadCapacityUnits") or 0)
            write += float(entry.get("WriteCapacityUnits") or 0)
        elif operation in _READS:
            read += float(entry.get("CapacityUnits") or 0)
        else:
            write += float(entry.get("CapacityUnits") or 0)
    return {"rcu": read, "wcu": write}


def _report_consumed_capacity() -> None:
    """Register the two hooks on every DynamoDB client this process creates."""
    from botocore.session import Session

    session_class: Any = Session  # patched the same way as the client method below
    original = session_class.create_client

    def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = original(self, *args, **kwargs)
        if (kwargs.get("service_name") or (args[0] if args else None)) == "dynamodb":
            client.meta.events.register("provide-client-params.dynamodb", _ask_for_capacity)
            client.meta.events.register("after-call.dynamodb", _note_capacity)
        return client

    session_class.create_client = create_client


# ----------------------------------------------------------------------------------- patching


def _record_aws_calls() -> None:
    from botocore.client import BaseClient

    client_class: Any = BaseClient  # the stubs do not declare the private method patched here
    original = client_class._make_api_call

    def counted(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        service = self.meta.service_model.service_name
        response = None
        ok = True
        _local.consumed = None
        began = time.thread_time()
        try:
            response = original(self, operation_name, api_params)
            return response
        except Exception:
            ok = False
            raise
        finally:
            returned = time.thread_time()
            context = _context()
            event: dict[str, Any] = {
                "t": time.time(),
                "role": _state.role,
                "ctx": context,
                "op": f"{service}:{operation_name}",
                "ok": ok,
            }
            tag = getattr(_local, "tag", None) or _state.tag
            if tag:
                event["tag"] = tag
            if service == "dynamodb":
                event.update(_dynamodb_details(operation_name, api_params, response))
                if operation_name == "TransactWriteItems":
                    event["tx"] = True
                # None: the answer reported no consumed capacity (an error, or not implemented).
                event["reported"] = _local.consumed
            elif service == "sqs" and operation_name == "ReceiveMessage":
                event["messages"] = len((response or {}).get("Messages") or [])
            elif service == "sqs" and operation_name in ("SendMessageBatch", "DeleteMessageBatch"):
                event["entries"] = len(api_params.get("Entries") or [])
            _emit(event)
            # The record's own CPU; and the whole request when the event source mapping made it.
            _add_overhead(time.thread_time() - returned + (returned - began if context == "outside" else 0.0))

    client_class._make_api_call = counted


def _time_handler(
    module_name: str,
    describe: Callable[[Any, Any], dict[str, Any]],
    tag: Callable[[Any], str | None] | None = None,
) -> None:
    module: Any = importlib.import_module(module_name)
    original = module.handler

    def timed(event: Any, context: Any) -> Any:
        _local.in_handler = True
        _local.tag = tag(event) if tag is not None else None
        _state.tag = _local.tag
        started = time.time()
        began = time.perf_counter()
        cpu_began = time.process_time()
        overhead_began = overhead_seconds()
        result = None
        try:
            result = original(event, context)
            return result
        finally:
            duration = time.perf_counter() - began
            cpu_ended = time.process_time()
            overhead_ended = overhead_seconds()
            _local.in_handler = False
            invocation: dict[str, Any] = {
                "t": started,
                "t_end": started + duration,
                "role": _state.role,
                "invocation": True,
                "duration": duration,
                # The process's CPU clock (all its threads) at both ends: invocations that overlap
                # share it, so the benchmark merges them into spans before it counts CPU.
                "cpu_start": cpu_began,
                "cpu_end": cpu_ended,
                "overhead_start": overhead_began,
                "overhead_end": overhead_ended,
                **describe(event, result),
            }
            if _local.tag:
                invocation["tag"] = _local.tag
            _local.tag = None
            _state.tag = None
            _emit(invocation)

    module.handler = timed


def _describe_worker(event: Any, result: Any) -> dict[str, Any]:
    records = event.get("Records", [])
    return {
        "records": len(records),
        "jobs": [json.loads(r["body"]).get("job_id") for r in records],
        "failures": len((result or {}).get("batchItemFailures", [])),
    }


def _describe_dispatcher(_event: Any, result: Any) -> dict[str, Any]:
    return {"summary": result or {}}


def _describe_api(event: Any, result: Any) -> dict[str, Any]:
    return {
        "method": event.get("httpMethod"),
        "path": event.get("path"),
        "status": (result or {}).get("statusCode"),
    }


def _target_path(event: Any) -> str | None:
    """The path of a created job's target URL: the benchmark names each scenario's jobs by it."""
    if event.get("httpMethod") != "POST" or not event.get("body"):
        return None
    try:
        body = json.loads(event["body"])
        # POST /v1/jobs/batch: a scenario's batch shares one path prefix; its first job names it.
        job = body["jobs"][0] if "jobs" in body else body
        url = job["target"]["url"]
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return urllib.parse.urlsplit(str(url)).path or None


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.timed_role")
    parser.add_argument("role", choices=["api", "dispatcher", "worker"])
    parser.add_argument("--events", required=True)
    args, role_args = parser.parse_known_args()
    _state.role = args.role
    _state.out = open(args.events, "a")  # noqa: SIM115 - open for the life of the process
    _record_aws_calls()
    _report_consumed_capacity()
    describe = {"api": _describe_api, "dispatcher": _describe_dispatcher, "worker": _describe_worker}[
        args.role
    ]
    _time_handler(
        f"punctual_functions.{args.role}.handler", describe, _target_path if args.role == "api" else None
    )
    from punctual.local.role import main as role_main

    role_main([args.role, *(a for a in role_args if a != "--")])


if __name__ == "__main__":
    main()
