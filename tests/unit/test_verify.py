"""The receiver's side of delivery signatures: ``punctual.verify`` accepts exactly what Punctual's
signer (``punctual_functions.core.signing``) sends, and the Node and Go checks that ``docs/targets.md`` shows
give the same answers on the same deliveries."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from punctual import verify as receiver
from punctual.verify import InvalidSignature, check, verify, verify_request
from punctual_functions.core.signing import compute_signature, sign

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_test_secret"
BODY = b'{"report":"sales"}'
NOW = datetime(2026, 11, 22, 12, 0, 5, 250_000, tzinfo=UTC)
T = NOW.timestamp()


def test_what_punctual_signs_verifies() -> None:
    header = sign(SECRET, BODY, NOW)
    assert verify(SECRET, header, BODY, now=T)
    assert verify(SECRET, header, BODY, now=T + 10)
    assert check(SECRET, header, BODY, now=T) == int(T)


def test_a_tampered_body_does_not_verify() -> None:
    header = sign(SECRET, BODY, NOW)
    assert not verify(SECRET, header, b'{"report":"salez"}', now=T)
    assert not verify(SECRET, header, BODY + b" ", now=T)


def test_another_secret_does_not_verify() -> None:
    header = sign(SECRET, BODY, NOW)
    assert not verify("another-secret", header, BODY, now=T)
    assert not verify("", header, BODY, now=T)


def test_a_stale_delivery_is_refused_outside_the_tolerance() -> None:
    header = sign(SECRET, BODY, NOW - timedelta(minutes=6))  # a replay six minutes later
    assert not verify(SECRET, header, BODY, now=T)
    assert verify(SECRET, header, BODY, now=T, tolerance=600)
    with pytest.raises(InvalidSignature, match="outside the tolerance of 300 s"):
        check(SECRET, header, BODY, now=T)


def test_a_timestamp_far_in_the_future_is_refused() -> None:
    assert not verify(SECRET, sign(SECRET, BODY, NOW + timedelta(minutes=10)), BODY, now=T)


def test_refreshing_the_timestamp_of_a_captured_delivery_breaks_the_signature() -> None:
    old = sign(SECRET, BODY, NOW - timedelta(hours=1))
    forged = f"t={int(T)}," + old.split(",")[1]
    with pytest.raises(InvalidSignature, match="no v1 signature matches"):
        check(SECRET, forged, BODY, now=T)


def test_any_matching_v1_among_several_verifies_for_secret_rotation() -> None:
    stamp = int(T)
    header = f"t={stamp},v1={'0' * 64},v1={compute_signature(SECRET, stamp, BODY)},v0=legacy"
    assert verify(SECRET, header, BODY, now=T)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("", "no Punctual-Signature header"),
        (None, "no Punctual-Signature header"),
        ("garbage", "no t="),
        ("v1=abc", "no t="),
        (f"t={int(T)}", "no v1 signature in"),
        (f"t=notanumber,v1={'a' * 64}", "one t=<unix seconds> is expected"),
        (f"t=+{int(T)},v1={'a' * 64}", "one t=<unix seconds> is expected"),
        (f"t={int(T)},t={int(T)},v1={'a' * 64}", "one t=<unix seconds> is expected"),
        (f"t={int(T)},v1=zz", "no v1 signature matches"),
        (f"t={int(T)},v1={'é' * 64}", "no v1 signature matches"),
        ("t=1," + "v1=" + "a" * 5000, "too long"),
    ],
)
def test_malformed_headers_never_verify_and_say_why(header: str | None, reason: str) -> None:
    assert not verify(SECRET, header, BODY, now=T)
    with pytest.raises(InvalidSignature, match=re.escape(reason)):
        check(SECRET, header, BODY, now=T)


def test_the_body_must_be_the_raw_bytes() -> None:
    with pytest.raises(TypeError, match="raw bytes"):
        check(SECRET, sign(SECRET, BODY, NOW), BODY.decode(), now=T)  # type: ignore[arg-type]


def test_verify_request_finds_the_header_in_any_capitalisation() -> None:
    header = sign(SECRET, BODY, NOW)
    for headers in (
        {"Punctual-Signature": header},
        {"punctual-signature": header},
        {"PUNCTUAL-SIGNATURE": header},
    ):
        assert verify_request(SECRET, headers, BODY, now=T) == int(T)
    with pytest.raises(InvalidSignature, match="no Punctual-Signature header"):
        verify_request(SECRET, {"Content-Type": "application/json"}, BODY, now=T)


def test_sign_makes_what_punctual_sends() -> None:
    assert receiver.sign(SECRET, BODY, int(T)) == sign(SECRET, BODY, NOW)


def test_the_module_needs_nothing_beyond_the_standard_library() -> None:
    probe = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); before = set(sys.modules); import punctual.verify; "
        "added = {name.split('.')[0] for name in set(sys.modules) - before}; "
        "print(sorted(added - set(sys.stdlib_module_names) - {'punctual'}))"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------- the Node and Go checks of the docs


def cases() -> list[dict[str, Any]]:
    """Deliveries and clocks, with punctual.verify's answer for each."""
    stamp = int(T)
    good = sign(SECRET, BODY, NOW)
    rows = [
        (SECRET, good, BODY, T),
        (SECRET, good, BODY, T + 299),
        (SECRET, good, BODY, T + 301),
        (SECRET, good, BODY, T - 301),
        (SECRET, good, b'{"report":"salez"}', T),
        ("another-secret", good, BODY, T),
        (SECRET, f"t={stamp},v1={'0' * 64},v1={compute_signature(SECRET, stamp, BODY)},v0=x", BODY, T),
        (SECRET, f"t={stamp},v1={compute_signature(SECRET, stamp, BODY).upper()}", BODY, T),
        (SECRET, f"t={stamp},garbage,v1={compute_signature(SECRET, stamp, BODY)}", BODY, T),
        (SECRET, f"t=+{stamp},v1={compute_signature(SECRET, stamp, BODY)}", BODY, T),
        (SECRET, f"t={stamp},t={stamp},v1={compute_signature(SECRET, stamp, BODY)}", BODY, T),
        (SECRET, f"v1={compute_signature(SECRET, stamp, BODY)}", BODY, T),
        (SECRET, f"t={stamp},v1=zz", BODY, T),
        (SECRET, "", BODY, T),
        (SECRET, "garbage", BODY, T),
        ("ключ-секрет-ключ", sign("ключ-секрет-ключ", "é".encode() + BODY, NOW), "é".encode() + BODY, T),
    ]
    return [
        {"secret": s, "header": h, "body": b.hex(), "now": n, "expected": verify(s, h, b, now=n)}
        for s, h, b, n in rows
    ]


def docs_block(language: str) -> str:
    blocks: list[str] = re.findall(
        rf"```{language}\n(.*?)```", (ROOT / "docs" / "targets.md").read_text(), re.S
    )
    assert len(blocks) == 1, f"docs/targets.md should show one {language} block"
    return blocks[0]


def test_the_cases_cover_both_answers() -> None:
    answers = [case["expected"] for case in cases()]
    assert answers.count(True) >= 5 and answers.count(False) >= 8


def test_the_node_check_in_the_docs_agrees_with_punctual_verify(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "Node is part of the project's toolchain (the CDK CLI)"
    script = tmp_path / "check.js"
    script.write_text(
        docs_block("js") + "\nconst cases = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));\n"
        "console.log(JSON.stringify(cases.map((c) => verifyPunctual(c.secret, c.header, "
        "Buffer.from(c.body, 'hex'), 300, c.now))));\n"
    )
    all_cases = cases()
    result = subprocess.run(
        [node, str(script)], input=json.dumps(all_cases), capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == [case["expected"] for case in all_cases]


def test_the_go_check_in_the_docs_agrees_with_punctual_verify(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no go on the PATH: the Go check of docs/targets.md was not run")
    package = tmp_path / "punctual"
    package.mkdir()
    (package / "verify.go").write_text(docs_block("go"))
    (package / "verify_test.go").write_text(
        """package punctual

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"
)

type delivery struct {
	Secret, Header, Body string
	Now                  float64
	Expected             bool
}

func TestCases(t *testing.T) {
	var cases []delivery
	raw, _ := os.ReadFile("cases.json")
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		body, _ := hex.DecodeString(c.Body)
		now := time.Unix(0, int64(c.Now*1e9))
		if got := Verify(c.Secret, c.Header, body, 300*time.Second, now); got != c.Expected {
			t.Errorf("case %d (%q): got %v, want %v", i, c.Header, got, c.Expected)
		}
	}
}
"""
    )
    (package / "cases.json").write_text(json.dumps(cases()))
    (package / "go.mod").write_text("module punctual\n\ngo 1.18\n")
    env = {
        "HOME": str(tmp_path),
        "GOCACHE": str(tmp_path / "cache"),
        "GOFLAGS": "-mod=mod",
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [go, "test", "./..."], check=False, cwd=package, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
