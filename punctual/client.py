"""A small client for the Punctual HTTP API: bearer tokens locally, SigV4 (as the caller, or as a role it
assumes) or an API key for a deployed API.

``Client`` answers the API's JSON as it is (the CLI's transport); ``Punctual`` (``punctual.typed_client``,
exported here) answers it typed, for users' own code (docs/client.md).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

import urllib3

from punctual.errors import ApiError as ApiError  # noqa: PLC0414  (each error: exported here too)
from punctual.errors import ConfigError as ConfigError  # noqa: PLC0414
from punctual.errors import Conflict as Conflict  # noqa: PLC0414
from punctual.errors import ConnectionFailed as ConnectionFailed  # noqa: PLC0414
from punctual.errors import InvalidRequest as InvalidRequest  # noqa: PLC0414
from punctual.errors import NotFound as NotFound  # noqa: PLC0414
from punctual.errors import PunctualError as PunctualError  # noqa: PLC0414
from punctual.errors import ServerError as ServerError  # noqa: PLC0414
from punctual.errors import Throttled as Throttled  # noqa: PLC0414
from punctual.errors import Unauthorized as Unauthorized  # noqa: PLC0414
from punctual.errors import api_error as api_error  # noqa: PLC0414
from punctual_functions.core.sigv4 import sign_sigv4

if TYPE_CHECKING:  # exported as they are at run time (__getattr__, at the end)
    from punctual.typed_client import BulkResult as BulkResult  # noqa: PLC0414
    from punctual.typed_client import Change as Change  # noqa: PLC0414
    from punctual.typed_client import Compared as Compared  # noqa: PLC0414
    from punctual.typed_client import CreatedJobs as CreatedJobs  # noqa: PLC0414
    from punctual.typed_client import Health as Health  # noqa: PLC0414
    from punctual.typed_client import Job as Job  # noqa: PLC0414
    from punctual.typed_client import JobStatus as JobStatus  # noqa: PLC0414
    from punctual.typed_client import Page as Page  # noqa: PLC0414
    from punctual.typed_client import Punctual as Punctual  # noqa: PLC0414
    from punctual.typed_client import Reason as Reason  # noqa: PLC0414
    from punctual.typed_client import Run as Run  # noqa: PLC0414
    from punctual.typed_client import RunKind as RunKind  # noqa: PLC0414
    from punctual.typed_client import RunStatus as RunStatus  # noqa: PLC0414
    from punctual.typed_client import UnexpectedAnswer as UnexpectedAnswer  # noqa: PLC0414

DEFAULT_ENDPOINT = "http://127.0.0.1:8000"
CONFIG_PATH = Path(os.environ.get("PUNCTUAL_CONFIG", Path.home() / ".config" / "punctual" / "config.json"))
# An IAM role's ARN, as AssumeRole takes it (any partition).
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
# The session name of the CLI's AssumeRole: what CloudTrail shows (and, with the deployment's
# owner_mode=session, part of the owner).
CLI_ROLE_SESSION_NAME = "punctual-cli"


def aws_credentials(config: Config) -> tuple[Any, str]:
    """The standard AWS credential chain's credentials and the region to sign for (the configured one,
    else the session's): what SigV4 signing needs; ``ConnectionFailed`` when there are none.

    With ``config.role_arn``, the credentials of that role instead, assumed with the chain's: botocore's
    own ``AssumeRoleCredentialFetcher`` in ``DeferredRefreshableCredentials``, what boto3 uses for a
    profile's ``role_arn``, so they are fetched on first use and fetched again before they expire
    (a long-lived client or ``punctual console`` outlives the hour a role's session lasts)."""
    import boto3

    session = boto3.session.Session()
    credentials = session.get_credentials()
    if credentials is None:
        raise ConnectionFailed("no AWS credentials found for SigV4 signing (aws configure, or AWS_PROFILE)")
    region = config.region or session.region_name or "us-east-1"
    if config.role_arn:
        from botocore.credentials import AssumeRoleCredentialFetcher, DeferredRefreshableCredentials

        fetcher = AssumeRoleCredentialFetcher(
            # STS in the API's region: its regional endpoint, as the signature's.
            client_creator=functools.partial(session.client, region_name=region),
            source_credentials=credentials,
            role_arn=config.role_arn,
            extra_args={"RoleSessionName": config.role_session_name},
        )
        credentials = DeferredRefreshableCredentials(fetcher.fetch_credentials, "assume-role")
    return credentials, region


@dataclass
class Config:
    """Where the API is and how to authenticate; from flags, environment, or the config file."""

    endpoint: str = DEFAULT_ENDPOINT
    token: str | None = None
    auth: str = "bearer"  # bearer | sigv4 | api_key
    region: str | None = None
    # API-key mode (a deployment with api_auth=api_key): sent as x-api-key; kept out of repr.
    api_key: str | None = field(default=None, repr=False)
    # SigV4 as this role (assumed with the caller's credentials): the owner of the jobs a custom
    # resource creates as its "jobs owner" role, say.
    role_arn: str | None = None
    role_session_name: str = CLI_ROLE_SESSION_NAME

    @classmethod
    def load(
        cls,
        endpoint: str | None,
        token: str | None,
        auth: str | None = None,
        api_key: str | None = None,
        role_arn: str | None = None,
    ) -> Config:
        """Flags, then environment, then the saved file, then the local stack.

        The saved authentication belongs to the saved endpoint: another endpoint given by flag or
        environment decides its own (bearer for a token or a local address, an API key when one is
        given, SigV4 otherwise). A role is assumed for SigV4 only: the other modes do not sign.
        """
        saved: dict[str, Any] = {}
        if CONFIG_PATH.exists():
            try:
                saved = json.loads(CONFIG_PATH.read_text())
            except ValueError as error:
                raise ConfigError(f"{CONFIG_PATH} is not valid JSON ({error}); fix or delete it") from error
            if not isinstance(saved, dict):
                raise ConfigError(f"{CONFIG_PATH} must hold a JSON object; fix or delete it")
        given_endpoint = endpoint or os.environ.get("PUNCTUAL_ENDPOINT")
        use_saved = given_endpoint is None or given_endpoint.rstrip("/") == str(
            saved.get("endpoint", "")
        ).rstrip("/")
        resolved_endpoint = given_endpoint or saved.get("endpoint") or DEFAULT_ENDPOINT
        resolved_token = (
            token or os.environ.get("PUNCTUAL_TOKEN") or (saved.get("token") if use_saved else None)
        )
        resolved_api_key = (
            api_key or os.environ.get("PUNCTUAL_API_KEY") or (saved.get("api_key") if use_saved else None)
        )
        resolved_auth = (
            auth
            or ("bearer" if resolved_token else None)
            or ("api_key" if resolved_api_key else None)
            or (saved.get("auth") if use_saved else None)
            or ("bearer" if is_local(resolved_endpoint) else "sigv4")
        )
        if resolved_auth == "api_key" and not resolved_api_key:
            raise ConfigError(
                f'auth api_key needs a key: --api-key, PUNCTUAL_API_KEY or "api_key" in {CONFIG_PATH}'
            )
        resolved_role = (
            role_arn or os.environ.get("PUNCTUAL_ROLE_ARN") or (saved.get("role_arn") if use_saved else None)
        )
        if resolved_auth == "sigv4" and resolved_role:
            check_role_arn(str(resolved_role))
        return cls(
            endpoint=str(resolved_endpoint).rstrip("/"),
            token=resolved_token or ("local-dev-token" if resolved_auth == "bearer" else None),
            auth=resolved_auth,
            region=(saved.get("region") if use_saved else None)
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION"),
            api_key=resolved_api_key if resolved_auth == "api_key" else None,
            role_arn=str(resolved_role) if resolved_auth == "sigv4" and resolved_role else None,
        )

    def save(self) -> Path:
        """Write the endpoint, its authentication and region (and the API key, in API-key mode; the role,
        when one is assumed) to the config file, readable by its owner only."""
        CONFIG_PATH.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {"endpoint": self.endpoint, "auth": self.auth, "region": self.region}
        if self.api_key is not None:
            data["api_key"] = self.api_key
        if self.role_arn is not None:
            data["role_arn"] = self.role_arn
        descriptor = os.open(CONFIG_PATH, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(json.dumps(data, indent=2) + "\n")
        CONFIG_PATH.chmod(0o600)  # a file written before by an older version may be wider
        return CONFIG_PATH


def check_role_arn(role_arn: str) -> None:
    """``ConfigError`` unless ``role_arn`` is an IAM role's ARN: said before any request, not as STS's
    validation error."""
    if not ROLE_ARN.match(role_arn):
        raise ConfigError(f"{role_arn!r} is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)")


def is_local(endpoint: str) -> bool:
    """Whether ``endpoint`` is on this machine (the local stack)."""
    host = urlsplit(endpoint).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1")


def masked(secret: str) -> str:
    """A secret as it may be shown: its last four characters only (none of a short one)."""
    return f"…{secret[-4:]}" if len(secret) >= 12 else "…"


class Authenticator:
    """How requests to the API are authenticated, as configured: SigV4 with the standard AWS
    credential chain (read once; temporary credentials refresh themselves) or with a role assumed
    with it, the API key (``x-api-key``), or the bearer token. The CLI's client, ``punctual
    console``'s forwarder and the typed client use it."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._aws: tuple[Any, str] | None = None

    def aws(self) -> tuple[Any, str]:
        """The credentials and the region SigV4 signs with; ``ConnectionFailed`` without any, or when
        the role cannot be assumed (asked at once: a console says so before it serves)."""
        if self._aws is None:
            credentials, region = aws_credentials(self.config)
            if self.config.role_arn:
                self._frozen(credentials)
            self._aws = credentials, region
        return self._aws

    def sign(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        credentials, region = self.aws()
        self._frozen(credentials)  # a refresh that fails is one line, not a traceback
        return sign_sigv4(credentials, region, method, url, data, headers)

    def _frozen(self, credentials: Any) -> Any:
        """The credentials as of now, refreshed if they are about to expire (the refresh is botocore's:
        SSO, a profile's role, ``role_arn``), with botocore's errors as ``ConnectionFailed``."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return credentials.get_frozen_credentials()
        except (BotoCoreError, ClientError) as error:
            role = f"cannot assume role {self.config.role_arn}: " if self.config.role_arn else ""
            raise ConnectionFailed(f"{role}{error}") from error

    def apply(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with the request's authentication added."""
        if self.config.auth == "sigv4":
            return self.sign(method, url, data, headers)
        if self.config.auth == "api_key" and self.config.api_key:
            return {**headers, "x-api-key": self.config.api_key}
        if self.config.token:
            return {**headers, "Authorization": f"Bearer {self.config.token}"}
        return headers


class Client:
    def __init__(self, config: Config, timeout: float = 30.0) -> None:
        self.config = config
        self.auth = Authenticator(config)
        self.http = urllib3.PoolManager(timeout=urllib3.Timeout(total=timeout), retries=False)

    # ------------------------------------------------------------------------------------ transport

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        params = {key: value for key, value in (query or {}).items() if value is not None}
        url = self.config.endpoint + path + (("?" + urlencode(params)) if params else "")
        data = json.dumps(body).encode() if body is not None else None
        all_headers = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        all_headers = self.auth.apply(method, url, data, all_headers)
        try:
            response = self.http.request(method, url, body=data, headers=all_headers)
        except urllib3.exceptions.HTTPError as error:
            raise ConnectionFailed(f"cannot reach {self.config.endpoint}: {error}") from error
        try:
            payload = json.loads(response.data) if response.data else None
        except ValueError:
            payload = {"reason": response.data[:200].decode(errors="replace")}
        if response.status >= 400:
            raise api_error(response.status, payload, response.headers.get("Retry-After"))
        return payload

    def _sign(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        """SigV4 with the standard AWS credential chain, for an API Gateway with IAM auth."""
        return self.auth.sign(method, url, data, headers)

    # ------------------------------------------------------------------------------------- the API

    def health(self) -> Any:
        return self.request("GET", "/v1/health")

    def create_job(self, body: dict[str, Any], idempotency_key: str | None = None) -> Any:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", "/v1/jobs", body, headers=headers)

    def create_jobs(self, bodies: list[dict[str, Any]], idempotency_key: str | None = None) -> Any:
        """POST /v1/jobs/batch: up to 100 jobs, answered one by one (``items``)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self.request("POST", "/v1/jobs/batch", {"jobs": bodies}, headers=headers)

    def backfill(self, job_id: str, body: dict[str, Any]) -> Any:
        """POST /v1/jobs/{job_id}/backfill: run past occurrences between from and to again."""
        return self.request("POST", f"/v1/jobs/{quote(job_id, safe='')}/backfill", body)

    def bulk(self, body: dict[str, Any]) -> Any:
        """POST /v1/jobs/bulk: pause, resume or cancel every job carrying some tags, answered per job."""
        return self.request("POST", "/v1/jobs/bulk", body)

    def preview_schedule(self, body: dict[str, Any]) -> Any:
        """POST /v1/schedules/preview: fire times and an outage's replay; nothing is created."""
        return self.request("POST", "/v1/schedules/preview", body)

    def list_jobs(
        self,
        *,
        limit: int = 20,
        cursor: str | None = None,
        status: str | None = None,
        name: str | None = None,
        name_prefix: str | None = None,
        tag: str | None = None,
    ) -> Any:
        """GET /v1/jobs: one page; ``tag`` is ``key=value``, the jobs carrying that tag."""
        query = {
            "limit": limit,
            "cursor": cursor,
            "status": status,
            "name": name,
            "name_prefix": name_prefix,
            "tag": tag,
        }
        return self.request("GET", "/v1/jobs", query=query)

    def get_job(self, job_id: str) -> Any:
        return self.request("GET", f"/v1/jobs/{quote(job_id, safe='')}")

    def patch_job(self, job_id: str, changes: dict[str, Any]) -> Any:
        return self.request("PATCH", f"/v1/jobs/{quote(job_id, safe='')}", changes)

    def cancel_job(self, job_id: str) -> Any:
        return self.request("DELETE", f"/v1/jobs/{quote(job_id, safe='')}")

    def job_action(self, job_id: str, action: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", f"/v1/jobs/{quote(job_id, safe='')}/{action}", body)

    def list_runs(
        self,
        job_id: str,
        *,
        limit: int = 20,
        cursor: str | None = None,
        status: str | None = None,
        reason: str | None = None,
    ) -> Any:
        return self.request(
            "GET",
            f"/v1/jobs/{quote(job_id, safe='')}/runs",
            query={"limit": limit, "cursor": cursor, "status": status, "reason": reason},
        )

    def list_changes(self, job_id: str, *, limit: int = 20, cursor: str | None = None) -> Any:
        """GET /v1/jobs/{job_id}/changes: the job's audit trail, newest first."""
        return self.request(
            "GET", f"/v1/jobs/{quote(job_id, safe='')}/changes", query={"limit": limit, "cursor": cursor}
        )

    def get_version(self, job_id: str, revision: int) -> Any:
        """GET /v1/jobs/{job_id}/versions/{revision}: the job's definition at that revision."""
        return self.request("GET", f"/v1/jobs/{quote(job_id, safe='')}/versions/{int(revision)}")

    def compare_versions(self, job_id: str, first: int, second: int) -> Any:
        """GET /v1/jobs/{job_id}/compare: what differs between two revisions."""
        return self.request(
            "GET", f"/v1/jobs/{quote(job_id, safe='')}/compare", query={"from": first, "to": second}
        )

    def restore_job(self, job_id: str, revision: int, note: str | None = None) -> Any:
        """POST /v1/jobs/{job_id}/restore: an earlier revision's definition, as a new revision."""
        body: dict[str, Any] = {"revision": revision}
        if note is not None:
            body["note"] = note
        return self.request("POST", f"/v1/jobs/{quote(job_id, safe='')}/restore", body)

    def get_run(self, job_id: str, run_id: str) -> Any:
        return self.request("GET", f"/v1/jobs/{quote(job_id, safe='')}/runs/{quote(run_id, safe='')}")

    def cancel_run(self, job_id: str, run_id: str) -> Any:
        return self.request("POST", f"/v1/jobs/{quote(job_id, safe='')}/runs/{quote(run_id, safe='')}/cancel")

    def stats(self) -> Any:
        return self.request("GET", "/v1/stats")

    # ---------------------------------------------------------------------------- business calendars

    def create_calendar(self, body: dict[str, Any]) -> Any:
        """POST /v1/calendars: a new calendar (``name`` and its rules)."""
        return self.request("POST", "/v1/calendars", body)

    def list_calendars(self) -> Any:
        return self.request("GET", "/v1/calendars")

    def get_calendar(self, name: str) -> Any:
        return self.request("GET", f"/v1/calendars/{quote(name, safe='')}")

    def replace_calendar(self, name: str, rules: dict[str, Any]) -> Any:
        """PUT /v1/calendars/{name}: its rules as a whole (created if absent)."""
        return self.request("PUT", f"/v1/calendars/{quote(name, safe='')}", rules)

    def delete_calendar(self, name: str) -> Any:
        return self.request("DELETE", f"/v1/calendars/{quote(name, safe='')}")

    def calendar_days(self, name: str, *, from_day: str | None = None, to_day: str | None = None) -> Any:
        """GET /v1/calendars/{name}/days: the days of a range the calendar excludes, with why."""
        query = {"from": from_day, "to": to_day}
        return self.request("GET", f"/v1/calendars/{quote(name, safe='')}/days", query=query)

    def create_limit(self, body: dict[str, Any]) -> Any:
        return self.request("POST", "/v1/limits", body)

    def list_limits(self) -> Any:
        return self.request("GET", "/v1/limits")

    def get_limit(self, name: str) -> Any:
        return self.request("GET", f"/v1/limits/{quote(name, safe='')}")

    def replace_limit(self, name: str, body: dict[str, Any]) -> Any:
        return self.request("PUT", f"/v1/limits/{quote(name, safe='')}", body)

    def delete_limit(self, name: str) -> Any:
        return self.request("DELETE", f"/v1/limits/{quote(name, safe='')}")


# The typed client and its answers (typed_client.__all__), exported here but imported on first use: they
# need the API's answer models (pydantic; punctual_functions.api.responses and what it imports, about 0.1 s),
# which the CLI, importing this module for every command, does without. mypy sees the imports above.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if not name.startswith("_"):  # an import machinery's probe (__path__, ...) is no reason to load it
            from punctual import typed_client

            if name in typed_client.__all__:
                return getattr(typed_client, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
