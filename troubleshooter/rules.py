"""Validation rules for free-value answers (an interface name, a timeout, a GPU count...).

A tree names a rule per free-value question; the rule is the only gate between a URL and a bash
script, so every rule accepts a narrow, shell-inert character set. The composer still
shell-quotes every value: the rule is the first line of defence, quoting the second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    describe: str  # what a valid value looks like, shown next to the field and in errors
    pattern: re.Pattern
    minimum: int | None = None  # integer rules only
    maximum: int | None = None
    max_length: int = 64

    def check(self, value: str) -> tuple[str | None, str]:
        """(error or None, canonical value). Integers are canonicalised so '060' and '60' are one state."""
        if value == "":
            return "Enter a value.", value
        if len(value) > self.max_length:
            return f"That is too long: {self.describe}", value
        if not self.pattern.fullmatch(value):
            return f"That is not valid here: {self.describe}", value
        if self.minimum is None and self.maximum is None:
            return None, value
        number = int(value)
        if (self.minimum is not None and number < self.minimum) or (self.maximum is not None and number > self.maximum):
            return f"Out of range: {self.describe}", value
        return None, str(number)


_INTEGER = re.compile(r"[0-9]{1,6}")
_HOSTNAME = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
_IPV6 = r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}"
_HCA = r"[A-Za-z][A-Za-z0-9_]{0,31}(?::[0-9]{1,2})?"

RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule(
            "interface",
            "a network interface name exactly as ip -br addr lists it, such as eth0, ens1f0np0 or bond0 "
            "(letters, digits, '.', '_' or '-'; at most 15 characters; no '@...' suffix)",
            re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,14}"),
            max_length=15,
        ),
        Rule(
            "hca-list",
            "one or more RDMA devices as ibstat names them, each optionally with ':port', separated by commas, "
            "such as mlx5_0:1,mlx5_1:1",
            re.compile(rf"{_HCA}(?:,{_HCA}){{0,15}}"),
            max_length=200,
        ),
        Rule("minutes", "a whole number of minutes from 1 to 1440", _INTEGER, minimum=1, maximum=1440),
        Rule("gpu-count", "a whole number of GPUs per node from 1 to 16", _INTEGER, minimum=1, maximum=16),
        Rule("gib", "a whole number of GiB from 1 to 1024", _INTEGER, minimum=1, maximum=1024),
        Rule("port", "a TCP port number from 1 to 65535", _INTEGER, minimum=1, maximum=65535),
        Rule(
            "host",
            "a host name or an IP address that every node can reach, such as node001, 10.0.0.5 or fd00::5",
            re.compile(rf"{_HOSTNAME}|{_IPV6}"),
            max_length=253,
        ),
        Rule(
            "path",
            "an absolute path such as /workspace/Megatron-LM (letters, digits, '/', '.', '_', '+' or '-'; "
            "no spaces, no '~', no '..')",
            re.compile(r"(?!.*(?:^|/)\.\.(?:/|$))/[A-Za-z0-9_.+/-]*"),
            max_length=255,
        ),
    )
}
