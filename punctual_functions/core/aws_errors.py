"""The AWS SDK's errors by meaning, read from the code every ``ClientError`` carries (no botocore
import: the api's router and the targets' outcomes both ask)."""

from __future__ import annotations

from typing import Final

# The codes with which AWS services refuse a request for its rate, not its content.
THROTTLING_CODES: Final = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "ProvisionedThroughputExceededException",
        "KmsThrottled",
        "KMSThrottlingException",
        "EC2ThrottledException",
    }
)


def throttling(error: BaseException) -> bool:
    """Whether ``error`` is an AWS SDK error refusing a request for its rate."""
    response = getattr(error, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") in THROTTLING_CODES
