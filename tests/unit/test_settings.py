"""Settings: read from the environment, converted, checked; the same rules as before pydantic left."""

from __future__ import annotations

import pytest

from punctual_functions.core.settings import Settings


def test_given_environment_strings_when_read_then_each_is_converted_to_its_type() -> None:
    settings = Settings.from_env(
        {
            "PUNCTUAL_SHARD_COUNT": "16",
            "PUNCTUAL_HTTP_ALLOW_LOOPBACK": "TRUE",
            "PUNCTUAL_HTTP_ALLOW_LIST": " 10.0.0.0/8 , hooks.internal ,",
            "PUNCTUAL_AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
            "PUNCTUAL_LEASE_SECONDS": "",
            "UNRELATED": "x",
        }
    )
    assert settings.shard_count == 16
    assert settings.http_allow_loopback is True
    assert settings.http_allow_list == ("10.0.0.0/8", "hooks.internal")
    assert settings.aws_endpoint_url == "http://127.0.0.1:5000"
    assert settings.lease_seconds == Settings().lease_seconds  # empty means unset


def test_settings_survive_a_round_trip_through_the_environment() -> None:
    settings = Settings(
        shard_count=3, http_allow_list=("a", "b"), allowed_target_arns=("*",), region="eu-west-1"
    )
    assert Settings.from_env(settings.to_env()) == settings


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PUNCTUAL_SHARD_COUNT": "0"}, "shard_count: must be at least 1"),
        ({"PUNCTUAL_SHARD_COUNT": "1001"}, "shard_count: must be at most 1000"),
        ({"PUNCTUAL_LOOKAHEAD_SECONDS": "30"}, "lookahead_seconds: must be at least 60"),
        ({"PUNCTUAL_LEASE_SECONDS": "2"}, "lease_seconds: must be at least 3"),
        ({"PUNCTUAL_SHARD_COUNT": "eight"}, "shard_count: expected an integer"),
        ({"PUNCTUAL_HTTP_ALLOW_LOOPBACK": "maybe"}, "http_allow_loopback: expected true or false"),
    ],
)
def test_given_a_bad_value_when_read_then_the_error_names_the_setting(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)


def test_given_wrong_types_in_code_then_construction_fails() -> None:
    with pytest.raises(ValueError, match="shard_count: expected an integer"):
        Settings(shard_count="8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shard_count: expected an integer"):
        Settings(shard_count=True)
    with pytest.raises(ValueError, match="unknown settings: colour"):
        Settings.from_values({"colour": "blue"})


def test_a_copy_with_changes_is_checked_too() -> None:
    settings = Settings()
    assert settings.replace(lease_seconds=5).lease_seconds == 5
    with pytest.raises(ValueError, match="lease_seconds"):
        settings.replace(lease_seconds=1)


def test_settings_are_frozen() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().shard_count = 2  # type: ignore[misc]


@pytest.mark.parametrize(("name", "value"), [("owner_mode", "user"), ("api_auth", "cognito")])
def test_a_setting_with_fixed_choices_refuses_another_value(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"{name}: must be one of"):
        Settings.from_env({f"PUNCTUAL_{name.upper()}": value})
