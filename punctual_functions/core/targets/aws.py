"""AWS deliveries: a synchronous Lambda invoke, SQS SendMessage, SNS Publish and EventBridge PutEvents,
and the classification of botocore errors as retriable or not (:data:`_AWS_RETRIABLE`).

Lambda and EventBridge carry the delivery headers as fields of the event, SQS and SNS as message
attributes; FIFO queues and topics deduplicate on the run id.

A target in another region of the deployment's partition is called through a client of its region
(``target_region``: from its ARN or queue URL); a bare name is the deployment's region.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    InvalidRegionError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectTimeoutError as BotoConnectTimeoutError
from botocore.exceptions import ReadTimeoutError as BotoReadTimeoutError

from punctual_functions.core.aws import client_in_region
from punctual_functions.core.aws_errors import THROTTLING_CODES
from punctual_functions.core.targets.outcome import (
    EXCERPT_BYTES,
    Delivery,
    TargetOutcome,
    delivery_headers,
    excerpt_of,
    failure,
    format_timestamp,
    json_text,
    success,
    traceparent,
)
from punctual_functions.core.targets.validation import target_region

__all__ = ["AwsDeliveries"]

_DEDUP_ID: Final = re.compile(r"[!-~]{1,128}")

# botocore error code -> retriable. Throttling and service-side failures clear up on their own; validation,
# permission and not-found errors do not. Codes not listed fall back on the HTTP status (see _aws_failure).
_AWS_RETRIABLE: Final[Mapping[str, bool]] = {
    **dict.fromkeys(THROTTLING_CODES, True),
    # service side, or a transient state of the target
    "InternalError": True,
    "InternalFailure": True,
    "InternalException": True,
    "InternalServerError": True,
    "ServiceException": True,
    "ServiceUnavailable": True,
    "ServiceUnavailableException": True,
    "ResourceNotReadyException": True,
    "ResourceConflictException": True,
    "EC2UnexpectedException": True,
    "ENILimitReachedException": True,
    "SubnetIPAddressLimitReachedException": True,
    "SnapStartNotReadyException": True,
    "SnapStartTimeoutException": True,
    "EFSMountTimeoutException": True,
    "EFSMountConnectivityException": True,
    "EFSIOException": True,
    "ExpiredToken": True,
    "ExpiredTokenException": True,
    "RequestExpired": True,
    # the target is missing or misconfigured, or we may not call it
    "AccessDenied": False,
    "AccessDeniedException": False,
    "AuthorizationError": False,
    "UnrecognizedClientException": False,
    "InvalidClientTokenId": False,
    "KMSAccessDeniedException": False,
    "KMSDisabledException": False,
    "KMSNotFoundException": False,
    "KMSInvalidStateException": False,
    "ResourceNotFoundException": False,
    "NotFound": False,
    "NotFoundException": False,
    "AWS.SimpleQueueService.NonExistentQueue": False,
    "QueueDoesNotExist": False,
    "ValidationException": False,
    "ValidationError": False,
    "InvalidParameter": False,
    "InvalidParameterValue": False,
    "InvalidParameterException": False,
    "InvalidParameterValueException": False,
    "InvalidRequestContentException": False,
    "RequestTooLargeException": False,
    "InvalidRuntimeException": False,
    "RecursiveInvocationException": False,
}


class OtherPartitionError(Exception):
    """A target in a region of another partition (aws-cn, aws-us-gov, ...) than the deployment's: its
    credentials are not valid there, so no call is made and no retry can help."""


class AwsDeliveries:
    """Builds the work of one attempt at an AWS target, with the deployment region's clients from
    ``client`` (shared, lazy) and, for a target in another region, that region's."""

    def __init__(self, client: Callable[[str], Any]) -> None:
        self._client = client

    def _client_for(self, service: str, region: str | None) -> Any:
        home = self._client(service)
        if region is None or region == home.meta.region_name:
            return home
        regional = client_in_region(home, region)
        if regional.meta.partition != home.meta.partition:
            raise OtherPartitionError(
                f"the target's region {region} is in the partition {regional.meta.partition}, "
                f"this deployment's is {home.meta.partition}"
            )
        return regional

    def lambda_work(self, target: Mapping[str, Any], delivery: Delivery) -> Callable[[], TargetOutcome]:
        event = {
            "job_id": delivery.job_id,
            "run_id": delivery.run_id,
            "attempt": delivery.attempt,
            "scheduled_for": format_timestamp(delivery.scheduled_for),
            "idempotency_key": delivery.idempotency_key,
            "traceparent": traceparent(delivery),
            "payload": delivery.payload,
        }
        event_bytes = json_text(event).encode("utf-8")
        region = target_region(target)

        def work() -> TargetOutcome:
            try:
                response = self._client_for("lambda", region).invoke(
                    FunctionName=target["function"], InvocationType="RequestResponse", Payload=event_bytes
                )
                stream = response.get("Payload")
                data = b""
                if stream is not None:
                    try:
                        data = stream.read(EXCERPT_BYTES)
                    finally:
                        stream.close()
            except Exception as exc:
                return _aws_failure(exc)
            function_error = response.get("FunctionError")
            if function_error:
                return failure(f"FunctionError: {function_error}", retriable=True, excerpt=excerpt_of(data))
            return success(excerpt_of(data))

        return work

    def sqs_work(
        self, target: Mapping[str, Any], delivery: Delivery, body_text: str
    ) -> Callable[[], TargetOutcome]:
        queue_url: str = target["queue_url"]
        params: dict[str, Any] = {
            "QueueUrl": queue_url,
            "MessageBody": body_text,
            "MessageAttributes": _message_attributes(delivery, body_text),
        }
        if queue_url.endswith(".fifo"):
            params.update(_fifo_params(delivery))
        return self._message_work("sqs", target_region(target), "send_message", params)

    def sns_work(
        self, target: Mapping[str, Any], delivery: Delivery, body_text: str
    ) -> Callable[[], TargetOutcome]:
        topic_arn: str = target["topic_arn"]
        params: dict[str, Any] = {
            "TopicArn": topic_arn,
            "Message": body_text,
            "MessageAttributes": _message_attributes(delivery, body_text),
        }
        if topic_arn.endswith(".fifo"):
            params.update(_fifo_params(delivery))
        return self._message_work("sns", target_region(target), "publish", params)

    def _message_work(
        self, service: str, region: str | None, operation: str, params: dict[str, Any]
    ) -> Callable[[], TargetOutcome]:
        """SQS SendMessage and SNS Publish: one call, success carries the MessageId."""

        def work() -> TargetOutcome:
            try:
                response = getattr(self._client_for(service, region), operation)(**params)
            except Exception as exc:
                return _aws_failure(exc)
            return success(json.dumps({"MessageId": response.get("MessageId")}))

        return work

    def eventbridge_work(self, target: Mapping[str, Any], delivery: Delivery) -> Callable[[], TargetOutcome]:
        detail = {
            "payload": delivery.payload,
            "punctual": {
                "job_id": delivery.job_id,
                "run_id": delivery.run_id,
                "attempt": delivery.attempt,
                "scheduled_for": format_timestamp(delivery.scheduled_for),
                "idempotency_key": delivery.idempotency_key,
                "traceparent": traceparent(delivery),
            },
        }
        entry = {
            "EventBusName": target["bus"],
            "Source": target["source"],
            "DetailType": target["detail_type"],
            "Detail": json_text(detail),
        }
        region = target_region(target)

        def work() -> TargetOutcome:
            try:
                response = self._client_for("events", region).put_events(Entries=[entry])
            except Exception as exc:
                return _aws_failure(exc)
            entries = response.get("Entries") or [{}]
            if response.get("FailedEntryCount", 0) > 0:
                code = entries[0].get("ErrorCode") or "FailedEntry"
                message = entries[0].get("ErrorMessage") or ""
                # A failed entry is retried unless its code is known to be permanent.
                retriable = _AWS_RETRIABLE.get(code, True)
                return failure(code, retriable=retriable, excerpt=excerpt_of(f"{code}: {message}".encode()))
            return success(json.dumps({"EventId": entries[0].get("EventId")}))

        return work


def _message_attributes(delivery: Delivery, body_text: str) -> dict[str, dict[str, str]]:
    headers = delivery_headers(delivery, body_text.encode("utf-8"), datetime.now(UTC))
    return {name: {"DataType": "String", "StringValue": value} for name, value in headers.items()}


def _fifo_params(delivery: Delivery) -> dict[str, str]:
    # The deduplication id is the idempotency key, so a re-execution of the same run (after a worker crash)
    # is dropped by SQS/SNS within their 5-minute deduplication window instead of delivered twice.
    key = delivery.idempotency_key
    dedup = key if _DEDUP_ID.fullmatch(key) else None
    if dedup is None:
        dedup = hashlib.sha256(key.encode("utf-8")).hexdigest()
    group = delivery.job_id if _DEDUP_ID.fullmatch(delivery.job_id) else dedup
    return {"MessageGroupId": group, "MessageDeduplicationId": dedup}


def _aws_failure(exc: Exception) -> TargetOutcome:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "ClientError")
        message = str(error.get("Message") or "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        retriable = _AWS_RETRIABLE.get(code)
        if retriable is None:
            retriable = isinstance(status, int) and (status in (408, 429) or status >= 500)
        return failure(code, retriable=retriable, excerpt=excerpt_of(f"{code}: {message}".encode()))
    if isinstance(exc, BotoConnectTimeoutError | BotoReadTimeoutError):
        return failure(f"timeout: {exc}", retriable=True)
    if isinstance(exc, OtherPartitionError):
        return failure(str(exc), retriable=False)
    if isinstance(
        exc, ParamValidationError | InvalidRegionError | NoCredentialsError | PartialCredentialsError
    ):
        return failure(f"{type(exc).__name__}: {exc}", retriable=False)
    if isinstance(exc, BotoCoreError | OSError):
        return failure(f"{type(exc).__name__}: {exc}", retriable=True)
    return failure(f"internal error: {type(exc).__name__}: {exc}", retriable=True)
