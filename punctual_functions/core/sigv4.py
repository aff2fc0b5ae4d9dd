"""SigV4 signing of a request to an API Gateway with IAM auth (``execute-api``): what the CLI, the
console's forwarder and the ``Job`` custom resource's handler sign their calls to the API with."""

from __future__ import annotations

from typing import Any


def sign_sigv4(
    credentials: Any, region: str, method: str, url: str, data: bytes | None, headers: dict[str, str]
) -> dict[str, str]:
    """``headers`` with the SigV4 signature of an API Gateway (``execute-api``) request. Frozen afresh
    for every request: temporary credentials (SSO, a role) refresh themselves."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method=method, url=url, data=data, headers=headers)
    SigV4Auth(credentials.get_frozen_credentials(), "execute-api", region).add_auth(request)
    return dict(request.headers.items())
