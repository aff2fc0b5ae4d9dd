"""The one source of truth for the table and the queues.

The CDK stack and the local runtime both build their resources from these definitions, so the names,
keys, index and TTL attribute cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any, Final

PK: Final = "pk"
SK: Final = "sk"
GSI1: Final = "gsi1"
GSI1_PK: Final = "gsi1pk"
GSI1_SK: Final = "gsi1sk"
TTL_ATTRIBUTE: Final = "expires_at"

# SQS: visibility is short and extended by the worker's heartbeat while it holds a message, so a
# crashed worker's message comes back within seconds. A retry waiting in the queue also counts as a
# receive, hence the generous receive count before the DLQ.
WORK_QUEUE_VISIBILITY_SECONDS: Final = 30
# The dispatcher's tick: the EventBridge rule's rate (punctual/cdk/scheduling.py).
TICK_SECONDS: Final = 60
WORK_QUEUE_MAX_RECEIVE_COUNT: Final = 50
DLQ_RETENTION_SECONDS: Final = 14 * 24 * 3600
SQS_MAX_DELAY_SECONDS: Final = 900
SQS_MAX_VISIBILITY_SECONDS: Final = 12 * 3600

# The worker function's limit (Lambda's maximum). One attempt must fit into one invocation: it may
# first wait for its second (up to the worker's max_early_wait_seconds, 20 s by default), then run
# for the job's timeout, then needs time to record its outcome. So the longest job timeout leaves
# that margin; a job that asked for the whole 900 s would be killed with its batch before its outcome
# was written, and run again and again until its message was dead-lettered.
WORKER_TIMEOUT_SECONDS: Final = 900
# AWS guidance for an SQS event source: the queue's visibility timeout is at least six times the
# function's timeout plus the batching window, so Lambda can retry a throttled batch before the
# messages reappear. The worker never leaves a message hidden that long (punctual_functions/worker/batch.py).
VISIBILITY_TIMEOUT_FACTOR: Final = 6
OUTCOME_MARGIN_SECONDS: Final = 30
MAX_JOB_TIMEOUT_SECONDS: Final = 840

# Attempts the SDK makes of a request, the first included (botocore's total_max_attempts; standard
# mode: throttles and transient errors retried with jittered backoff, up to 20 s between). The api
# makes two of a table request: one the table throttles (more creates a second for one owner than its
# index partition takes: docs/scale.md) is answered 429 with Retry-After within about a second,
# rather than holding its invocation in backoff for up to half a minute (API Gateway answers 504 at
# 29 s, and the client cannot tell what landed).
TABLE_ATTEMPTS: Final = 6
API_TABLE_ATTEMPTS: Final = 2


# The worker function's memory: the smallest at which ten runs due at one second all start on time
# (`make bench`, memory: docs/benchmarks.md, "The worker's memory"). Lambda's CPU is in proportion to memory.
WORKER_MEMORY_MB: Final = 768
# The dispatcher's: one full vCPU. A sweep is CPU-bound at load (each request's SDK work), and at
# 1,024 MB one invocation could not dispatch 10,000 jobs within their minute (the simulator: runs
# started 5.7 s late at p50, 47 s at p99; at 1,769 MB p99 under 100 ms, docs/scale.md). CPU-bound work
# costs the same GB-seconds at any size; an idle tick, mostly waiting, a few cents a month more.
DISPATCHER_MEMORY_MB: Final = 1769
API_MEMORY_MB: Final = 1024


def deployed_visibility_seconds(batching_window_seconds: int) -> int:
    """The work queue's visibility timeout as deployed (locally it is WORK_QUEUE_VISIBILITY_SECONDS)."""
    return VISIBILITY_TIMEOUT_FACTOR * WORKER_TIMEOUT_SECONDS + batching_window_seconds


def table_definition(table_name: str) -> dict[str, Any]:
    """Arguments for DynamoDB ``CreateTable`` (the CDK construct mirrors them)."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": PK, "AttributeType": "S"},
            {"AttributeName": SK, "AttributeType": "S"},
            {"AttributeName": GSI1_PK, "AttributeType": "S"},
            {"AttributeName": GSI1_SK, "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": PK, "KeyType": "HASH"},
            {"AttributeName": SK, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": GSI1,
                "KeySchema": [
                    {"AttributeName": GSI1_PK, "KeyType": "HASH"},
                    {"AttributeName": GSI1_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    }


def queue_names(prefix: str) -> tuple[str, str]:
    """(work queue, dead-letter queue) names."""
    return f"{prefix}-work", f"{prefix}-dlq"


def work_queue_attributes(dlq_arn: str) -> dict[str, str]:
    return {
        "VisibilityTimeout": str(WORK_QUEUE_VISIBILITY_SECONDS),
        "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": WORK_QUEUE_MAX_RECEIVE_COUNT}
        ),
    }


def dlq_attributes() -> dict[str, str]:
    return {"MessageRetentionPeriod": str(DLQ_RETENTION_SECONDS)}
