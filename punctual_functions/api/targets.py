"""The target models: one per target type, as a request gives it (``Target``) and as an answer shows it
stored (``TargetOut``), each union chosen by ``type``.

Neither side validates the target's fields: the domain's ``validate_target`` does (naming the field it
refuses, ``target.url``, in the words the API has always used), and a stored target is answered as
stored. The models keep the object as given (:meth:`AsGiven.spec`, also what they serialize to); their
types and constraints document what ``validate_target`` accepts and what it stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    StringConstraints,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from punctual_functions.core.ssrf_guard import MAX_URL_LENGTH
from punctual_functions.core.targets.validation import (
    BUS_ARN,
    BUS_NAME,
    DEFAULT_EVENT_BUS,
    DEFAULT_EVENT_DETAIL_TYPE,
    DEFAULT_EVENT_SOURCE,
    DEFAULT_HTTP_METHOD,
    FUNCTION_NAME,
    MAX_HEADER_NAME,
    MAX_HEADER_VALUE,
    MAX_HEADERS,
    MAX_LENGTHS,
    MAX_TIMEOUT_SECONDS,
    TARGET_TYPES,
    TOPIC_ARN,
)


class AsGiven(BaseModel):
    """A model that keeps the object it was given, and serializes to it (see the module's docstring)."""

    _given: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_as_given(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(data, Mapping):
            return handler(data)
        target = cls.model_construct(**{key: value for key, value in data.items() if key in cls.model_fields})
        target._given = dict(data)
        return target

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        # No return annotation: the serialization schema stays the model's, as documented.
        return self._given

    def spec(self) -> dict[str, Any]:
        """The target object exactly as given, for ``validate_target``."""
        return self._given


class TargetIn(AsGiven):
    """A target as the caller sent it, described for the OpenAPI document by one model per type.

    The ``type`` picks the model (an unknown or missing type is refused here); the fields are checked by
    the domain's ``validate_target``, after the schedule."""

    model_config = ConfigDict(extra="forbid", regex_engine="python-re")


def _anchored(*patterns: str) -> str:
    """A JSON Schema pattern matching what ``re.fullmatch`` with any of ``patterns`` accepts."""
    return "^(?:" + "|".join(patterns) + ")$"


HeaderName = Annotated[str, StringConstraints(max_length=MAX_HEADER_NAME)]
HeaderValue = Annotated[str, StringConstraints(pattern=r"^[^\r\n\x00]*$", max_length=MAX_HEADER_VALUE)]
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]

URL_TEXT = (
    "http or https, without user:password@; its path, query and fragment may use "
    "{{scheduled_for}}, {{run_id}}, {{attempt}} and {{job_id}}, filled in (percent-encoded) per attempt"
)
HEADERS_TEXT = (
    "sent with every request (none by default); values may use the four template names, as the URL; "
    "names are HTTP tokens; Host, Content-Length, Transfer-Encoding, Connection and other hop-by-hop "
    "headers, Idempotency-Key, traceparent and Punctual-* are refused"
)
HTTP_TIMEOUT_TEXT = (
    "the call ends at this or the job's timeout_seconds, whichever is smaller (none by default: the job's)"
)
FUNCTION_TEXT = "a function name, a name with :alias, or an ARN"
QUEUE_URL_TEXT = "an SQS queue URL: http(s)://<host>/<12-digit account>/<queue name>"
TOPIC_ARN_TEXT = "an SNS topic ARN"
BUS_TEXT = "an event bus name or ARN"
SOURCE_TEXT = "not starting with aws. (reserved for AWS services)"


class HttpTargetIn(TargetIn):
    """A webhook: one HTTP request per attempt. A 2xx answer is success; 408, 429, 5xx, connection
    errors and timeouts are retried. Loopback, private, link-local and metadata addresses are refused
    unless the deployment allows them."""

    type: Literal["http"]
    url: str = Field(
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description=URL_TEXT,
        examples=["https://example.com/hook", "https://example.com/runs/{{run_id}}?attempt={{attempt}}"],
    )
    method: HttpMethod | None = Field(
        default=DEFAULT_HTTP_METHOD, description="any case; a GET sends no body", examples=["POST"]
    )
    headers: dict[HeaderName, HeaderValue] | None = Field(
        default=None, max_length=MAX_HEADERS, description=HEADERS_TEXT, examples=[{"X-Team": "data"}]
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, le=MAX_TIMEOUT_SECONDS, description=HTTP_TIMEOUT_TEXT, examples=[10]
    )


class LambdaTargetIn(TargetIn):
    """A synchronous Lambda invoke; a function error or throttling is retried."""

    type: Literal["lambda"]
    function: str = Field(
        min_length=1,
        max_length=MAX_LENGTHS["function"],
        pattern=_anchored(FUNCTION_NAME.pattern),
        description=FUNCTION_TEXT,
        examples=["my-function"],
    )


class SqsTargetIn(TargetIn):
    """SendMessage: the payload is the body, the delivery headers are message attributes; a FIFO queue
    groups by job and deduplicates by run."""

    type: Literal["sqs"]
    queue_url: str = Field(
        min_length=1,
        max_length=MAX_LENGTHS["queue_url"],
        description=QUEUE_URL_TEXT,
        examples=["https://sqs.eu-central-1.amazonaws.com/123456789012/reports"],
    )


class SnsTargetIn(TargetIn):
    """Publish: the payload is the message, the delivery headers are message attributes."""

    type: Literal["sns"]
    topic_arn: str = Field(
        min_length=1,
        max_length=MAX_LENGTHS["topic_arn"],
        pattern=_anchored(TOPIC_ARN.pattern),
        description=TOPIC_ARN_TEXT,
        examples=["arn:aws:sns:eu-central-1:123456789012:reports"],
    )


class EventBridgeTargetIn(TargetIn):
    """PutEvents: one event whose detail holds the payload and the delivery's identifiers."""

    type: Literal["eventbridge"]
    bus: str | None = Field(
        default=DEFAULT_EVENT_BUS,
        min_length=1,
        max_length=MAX_LENGTHS["bus"],
        pattern=_anchored(BUS_NAME.pattern, BUS_ARN.pattern),
        description=BUS_TEXT,
    )
    source: str | None = Field(
        default=DEFAULT_EVENT_SOURCE, min_length=1, max_length=MAX_LENGTHS["source"], description=SOURCE_TEXT
    )
    detail_type: str | None = Field(
        default=DEFAULT_EVENT_DETAIL_TYPE, min_length=1, max_length=MAX_LENGTHS["detail_type"]
    )


def _target_object(value: Any) -> Any:
    """Refuses, before the discriminator, what the domain refused before the target had models: a
    target that is not an object, or without a known type (the error handler names ``target.type``)."""
    if not isinstance(value, Mapping):
        raise PydanticCustomError("dict_type", "Input should be a valid dictionary")
    if not isinstance(value.get("type"), str) or value["type"] not in TARGET_TYPES:
        raise PydanticCustomError(
            "target_type", "must be one of {types}", {"types": ", ".join(TARGET_TYPES), "field": "type"}
        )
    return value


Target = Annotated[
    HttpTargetIn | LambdaTargetIn | SqsTargetIn | SnsTargetIn | EventBridgeTargetIn,
    Field(discriminator="type"),
    BeforeValidator(_target_object),
]


# ------------------------------------------------------------------------------------ as answered


class TargetOut(AsGiven):
    """A target as stored and answered: ``validate_target``'s form, its defaults filled in. Built only
    for the document and the tests (``defer_build``, as every answer model)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class HttpTargetOut(TargetOut):
    """A webhook (see HttpTargetIn)."""

    type: Literal["http"]
    url: str = Field(description=URL_TEXT)
    method: HttpMethod = Field(description="upper case; a GET sends no body")
    headers: dict[str, str] = Field(description="sent with every request (an empty object: none)")
    timeout_seconds: float | None = Field(
        default=None, description="present when given: " + HTTP_TIMEOUT_TEXT
    )


class LambdaTargetOut(TargetOut):
    """A synchronous Lambda invoke (see LambdaTargetIn)."""

    type: Literal["lambda"]
    function: str = Field(description=FUNCTION_TEXT)


class SqsTargetOut(TargetOut):
    """SendMessage (see SqsTargetIn)."""

    type: Literal["sqs"]
    queue_url: str = Field(description=QUEUE_URL_TEXT)


class SnsTargetOut(TargetOut):
    """Publish (see SnsTargetIn)."""

    type: Literal["sns"]
    topic_arn: str = Field(description=TOPIC_ARN_TEXT)


class EventBridgeTargetOut(TargetOut):
    """PutEvents (see EventBridgeTargetIn)."""

    type: Literal["eventbridge"]
    bus: str = Field(description=BUS_TEXT)
    source: str = Field(description=SOURCE_TEXT)
    detail_type: str = Field(description="the event's detail-type")


StoredTarget = Annotated[
    HttpTargetOut | LambdaTargetOut | SqsTargetOut | SnsTargetOut | EventBridgeTargetOut,
    Field(discriminator="type"),
]
