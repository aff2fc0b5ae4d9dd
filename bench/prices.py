"""AWS list prices the cost benchmark turns requests into dollars with (us-east-1, on-demand).

The same figures as docs/deploy.md ("What it costs"), which states them for us-east-1; they were not
re-checked against AWS for this run. Update ``AS_OF`` and the values together.
"""

from __future__ import annotations

from punctual_functions.core.resources import WORKER_MEMORY_MB

AS_OF = "the prices stated in docs/deploy.md (us-east-1 list prices, 2025); not re-checked online"
REGION = "us-east-1"

DYNAMODB_WRITE_REQUEST_UNIT = 0.625 / 1e6  # on-demand; a TransactWriteItems item costs 2 WRU per KB
DYNAMODB_READ_REQUEST_UNIT = 0.125 / 1e6  # on-demand; 4 KB strongly consistent, 2x transactional
SQS_REQUEST = 0.40 / 1e6  # standard queue, per request, each 64 KB chunk of a payload is a request
LAMBDA_REQUEST = 0.20 / 1e6
LAMBDA_GB_SECOND_ARM64 = 0.0000133334  # first pricing tier
API_GATEWAY_REST_REQUEST = 3.50 / 1e6  # first 333 million a month (API-key deployments)
API_GATEWAY_HTTP_REQUEST = 1.00 / 1e6  # first 300 million a month, per 512 KB (the default: IAM)
CLOUDWATCH_LOGS_INGESTED_GB = 0.50
EVENTBRIDGE_SCHEDULER_INVOCATION = 1.00 / 1e6  # for comparison: EventBridge Scheduler, per invocation

# Memory of each function, as in infra/ (docs/deploy.md).
MEMORY_GB = {"api": 1.0, "dispatcher": 1.0, "worker": WORKER_MEMORY_MB / 1024}

TABLE = [
    ("DynamoDB write request unit", "$0.625 per million"),
    ("DynamoDB read request unit", "$0.125 per million"),
    ("SQS standard request (64 KB chunk)", "$0.40 per million"),
    ("Lambda request", "$0.20 per million"),
    ("Lambda arm64 duration", "$0.0000133334 per GB-second"),
    ("API Gateway HTTP API request (the default, IAM auth; per 512 KB)", "$1.00 per million"),
    ("API Gateway REST API request (API-key auth)", "$3.50 per million"),
    ("CloudWatch Logs ingestion", "$0.50 per GB"),
    ("EventBridge Scheduler (comparison)", "$1.00 per million invocations"),
]
