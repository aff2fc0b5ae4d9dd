"""CloudWatch Logs JSON filter patterns, evaluated against a log event the way CloudWatch documents it.

No library evaluates them: moto's logs backend matches plain terms and quoted phrases only and lets
every JSON pattern (``{ ... }``) match every event, so a pattern that never matches on AWS would pass
there. This evaluator knows the subset of the documented syntax the stack's patterns use (AWS
"Filter pattern syntax for metric filters", JSON log events) and refuses anything else:

- ``{ <selector> <op> <value> }`` joined by ``&&`` and ``||`` (``&&`` binds tighter), with parentheses;
  a selector is ``$.name`` or ``$.a.b`` on the event's JSON object;
- a quoted value (``"text"``, ``*`` matching any characters) is a string comparison, ``=`` or
  ``!=``, and holds only for a field whose JSON value is a string;
- a number (``0``, ``1.5``: AWS documents no negative literal, so none is taken) is a numeric
  comparison, any of ``= != < > <= >=``, and holds only for a field whose JSON value is a number.

A field that is missing, or of the other type, matches no comparison.
"""

from __future__ import annotations

import fnmatch
import json
import operator
import re
from collections.abc import Callable
from typing import Any, Final

_TOKEN: Final = re.compile(
    r"\s*(?:(?P<paren>[()])|(?P<logic>&&|\|\|)|(?P<op>!=|<=|>=|=|<|>)"
    r"|(?P<selector>\$(?:\.[A-Za-z_][A-Za-z0-9_]*)+)|(?P<number>\d+(?:\.\d+)?)"
    r'|(?P<string>"(?:[^"\\]|\\.)*")|(?P<other>\S+))'
)
_NUMERIC: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}
_MISSING: Final = object()


def select(selector: str, event: dict[str, Any]) -> Any:
    """The value a ``$.a.b`` selector names in a JSON event (a metric filter's MetricValue too)."""
    if not re.fullmatch(r"\$(\.[A-Za-z_][A-Za-z0-9_]*)+", selector):
        raise NotImplementedError(f"selector {selector!r}")
    value: Any = event
    for name in selector.split(".")[1:]:
        if not isinstance(value, dict) or name not in value:
            return _MISSING
        value = value[name]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(value: Any, op: str, kind: str, literal: str) -> bool:
    if kind == "string":
        if op not in ("=", "!="):
            raise NotImplementedError(f"string comparison {op!r}")
        if not isinstance(value, str):
            return False
        matched = fnmatch.fnmatchcase(value, json.loads(literal).replace("[", "[[]"))
        return matched if op == "=" else not matched
    if not _is_number(value):
        return False
    return _NUMERIC[op](value, float(literal))


class _Parser:
    def __init__(self, text: str, event: dict[str, Any]) -> None:
        self.tokens = self._tokens(text)
        self.event = event

    @staticmethod
    def _tokens(text: str) -> list[tuple[str, str]]:
        tokens = []
        position = 0
        text = text.rstrip()
        while position < len(text):
            found = _TOKEN.match(text, position)
            assert found is not None and found.lastgroup is not None
            kind = found.lastgroup
            if kind == "other":
                raise NotImplementedError(f"{found.group(kind)!r} (unquoted text, IS NULL, EXISTS, regex...)")
            tokens.append((kind, found.group(kind)))
            position = found.end()
        return tokens

    def _next(self, kind: str | None = None) -> str:
        if not self.tokens:
            raise ValueError("the pattern ends too soon")
        found_kind, text = self.tokens.pop(0)
        if kind is not None and found_kind != kind:
            raise ValueError(f"expected {kind}, found {text!r}")
        return text

    def _peek(self) -> str | None:
        return self.tokens[0][1] if self.tokens else None

    def expression(self) -> bool:
        result = self._conjunction()
        while self._peek() == "||":
            self._next("logic")
            right = self._conjunction()  # evaluated anyway, so a bad term is found in any branch
            result = result or right
        return result

    def _conjunction(self) -> bool:
        result = self._term()
        while self._peek() == "&&":
            self._next("logic")
            right = self._term()
            result = result and right
        return result

    def _term(self) -> bool:
        if self._peek() == "(":
            self._next("paren")
            result = self.expression()
            if self._next("paren") != ")":
                raise ValueError("unbalanced parentheses")
            return result
        value = select(self._next("selector"), self.event)
        op = self._next("op")
        kind, literal = self.tokens.pop(0) if self.tokens else ("", "")
        if kind not in ("string", "number"):
            raise ValueError(f"expected a quoted string or a number after {op!r}, found {literal!r}")
        return _compare(value, op, kind, literal)


def matches(pattern: str, message: str) -> bool:
    """Whether a JSON filter pattern matches a log event's message (not JSON: no match)."""
    text = pattern.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise NotImplementedError("only JSON filter patterns ({ ... })")
    try:
        event = json.loads(message)
    except json.JSONDecodeError:
        return False
    if not isinstance(event, dict):
        return False
    parser = _Parser(text[1:-1], event)
    result = parser.expression()
    if parser.tokens:
        raise ValueError(f"unexpected {parser.tokens[0][1]!r}")
    return result


def metric_value(selector: str, message: str) -> float | None:
    """The value a MetricValue selector publishes for a matched event: a number, or None."""
    value = select(selector, json.loads(message))
    return float(value) if _is_number(value) else None
