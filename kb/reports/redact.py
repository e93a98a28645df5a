"""Take secrets out of log text before it is stored, and optionally mask what identifies a site.

Every pattern runs in time linear in the text: bounded classes and repeats, no nested quantifiers, and no
pattern that scans far ahead from a match that then fails (the private-key rule takes key body lines only,
rather than up to 20,000 characters of anything, which cost 129 s on 8 MB of BEGIN lines).
Each keeps the name of what it replaced, so a reader still sees that a token was there ("hf_[REDACTED]").

The list follows the token formats documented by each service and the plugins of Yelp's detect-secrets 1.5.0
(AWS, Azure storage, basic auth, JWT, npm, Slack, Stripe) plus the names-and-values gitleaks looks for. It is
kept here rather than importing detect-secrets: its plugins report where a secret is, not what to put in its
place, and its keyword and entropy plugins flag the long hex and base64 ids that fill NCCL logs. Forms a log
also carries: a value on the line after its name, URL-encoded separators (%3A, %3D, %40), an empty URL user.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

REDACTED = "[REDACTED]"

_SEP = r"\"?'?\s{0,3}(?:[:=]|%3[aAdD])(?:\s|%20|\\){0,12}\"?'?"  # `: `, `=`, `": "`, `%3D`, a newline before the value
# A key body line: base64, or a header such as `Proc-Type: 4,ENCRYPTED`, to the end of its line (or `\n` in JSON).
_KEY_LINE = r"(?:\r?\n|\\n)[ \t]{0,8}(?:[A-Za-z0-9+/=]{1,100}|[A-Za-z-]{1,40}: [^\n\\]{0,100})(?=[\r\n\"]|\\n|$)"
_KEY_NAMES = (
    r"password|passwd|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|auth[_-]?token|"
    r"private[_-]?key|account[_-]?key|shared[_-]?access[_-]?key|client[_-]?secret|credentials?"
)

# (name, pattern, replacement). Order matters: whole blocks and URL credentials before single tokens.
_SECRET_RULES: list[tuple[str, re.Pattern, str | Callable[[re.Match], str]]] = [
    (
        "private key block",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:" + _KEY_LINE + r"){0,2000}"
            r"(?:(?:\r?\n|\\n)[ \t]{0,8}-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
        ),
        "-----BEGIN PRIVATE KEY----- " + REDACTED + " -----END PRIVATE KEY-----",
    ),
    (
        "password in a URL",
        re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@]{0,200}:)[^\s@/]{1,200}@"),
        lambda m: m.group(1) + REDACTED + "@",
    ),
    (
        "password in a URL-encoded URL",
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,20}%3A%2F%2F[^\s:/@%]{0,200}%3A)[^\s@/%]{1,200}%40"),
        lambda m: m.group(1) + REDACTED + "%40",
    ),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_" + REDACTED),
    ("Hugging Face org token", re.compile(r"\bapi_org_[A-Za-z0-9]{20,}"), "api_org_" + REDACTED),
    ("GitHub fine-grained token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), "github_pat_" + REDACTED),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), lambda m: m.group(0)[:4] + REDACTED),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), "AKIA" + REDACTED),
    (
        "AWS secret or session key",
        re.compile(
            r"(?i)\b(aws_?secret_?access_?key|aws_?session_?token|secretaccesskey|sessiontoken)(" + _SEP + r")"
            r"[A-Za-z0-9/+=]{16,}"
        ),
        lambda m: m.group(1) + m.group(2) + REDACTED,
    ),
    (
        "W&B API key",
        re.compile(r"(?i)\b(wandb_api_key" + _SEP + r")[A-Za-z0-9_-]{20,}"),
        lambda m: m.group(1) + REDACTED,
    ),
    (
        "W&B key on a wandb line",
        re.compile(r"(?i)(\bwandb\b[^\n]{0,80}?)\b(?:local-)?[0-9a-f]{40}\b"),
        lambda m: m.group(1) + REDACTED,
    ),
    ("W&B local key", re.compile(r"\blocal-[0-9a-f]{40}\b"), "local-" + REDACTED),
    ("bearer token", re.compile(r"(?i)\b(bearer(?:\s|%20){1,12})[A-Za-z0-9._~+/=-]{8,}"), lambda m: m.group(1) + REDACTED),
    (
        "basic auth header",
        re.compile(r"(?i)\b(authorization(?::|%3A)(?:\s|%20){0,3}basic(?:\s|%20){1,3})[A-Za-z0-9+/=]{8,}"),
        lambda m: m.group(1) + REDACTED,
    ),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]{0,2000}){0,2}"), "eyJ" + REDACTED),
    ("OpenAI-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), "sk-" + REDACTED),
    ("Stripe key", re.compile(r"\b([rsp]k_(?:live|test)_)[A-Za-z0-9]{10,}"), lambda m: m.group(1) + REDACTED),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{10,}"), "AIza" + REDACTED),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{20,}"), "npm_" + REDACTED),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "xox-" + REDACTED),
    ("Azure SAS signature", re.compile(r"(?i)([?&;]sig(?:=|%3D))[A-Za-z0-9%/+=]{20,}"), lambda m: m.group(1) + REDACTED),
    (
        "password, token or key assignment",
        re.compile(
            r"(?i)((?:" + _KEY_NAMES + r")" + _SEP + r")"  # the name's own prefix (PG, x-, _) stays as it is
            r"(?!\[REDACTED\])[^\s\"',;&]{4,}"
        ),
        lambda m: m.group(1) + REDACTED,
    ),
    (
        "netrc password",
        re.compile(r"(?i)\b(machine\s{1,3}\S{1,200}\s{1,3}login\s{1,3}\S{1,200}\s{1,3}password\s{1,3})\S{1,400}"),
        lambda m: m.group(1) + REDACTED,
    ),
]
# Literals (case-folded) each rule's pattern cannot match without: a rule runs only on a text holding one of them,
# so a log is scanned by a few patterns instead of all of them (tests/kb/web/test_redaction.py checks every rule has
# some, found in its example).
_NEEDLES: dict[str, tuple[str, ...]] = {
    "private key block": ("private key",),
    "password in a URL": ("://",),
    "password in a URL-encoded URL": ("%3a%2f%2f",),
    "Hugging Face token": ("hf_",),
    "Hugging Face org token": ("api_org_",),
    "GitHub fine-grained token": ("github_pat_",),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "AWS access key id": ("akia", "asia", "abia", "acca"),
    "AWS secret or session key": ("secret", "session"),
    "W&B API key": ("wandb_api_key",),
    "W&B key on a wandb line": ("wandb",),
    "W&B local key": ("local-",),
    "bearer token": ("bearer",),
    "basic auth header": ("authorization",),
    "JSON Web Token": ("eyj",),
    "OpenAI-style key": ("sk-",),
    "Stripe key": ("k_live_", "k_test_"),
    "Google API key": ("aiza",),
    "npm token": ("npm_",),
    "Slack token": ("xox",),
    "Azure SAS signature": ("sig",),
    "password, token or key assignment": ("pass", "pwd", "secret", "token", "key", "credential"),
    "netrc password": ("machine",),
}
# A bare line of base64 as long as a PEM body line: key material cut off from its BEGIN line.
_KEY_BODY_RE = re.compile(r"(?m)^[ \t]{0,8}[A-Za-z0-9+/]{60,76}={0,2}[ \t]{0,8}$")

_IPV4_RE = re.compile(r"(?<![\d.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\d.])")
_IPV6_RE = re.compile(r"(?i)(?<![0-9a-f:])(?:[0-9a-f]{1,4}:){4,7}[0-9a-f]{1,4}(?![0-9a-f:])|\bfe80::[0-9a-f:]{2,40}")
_FQDN_RE = re.compile(
    r"(?i)\b[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9-]{1,63}){1,8}\.(?:com|net|org|io|ai|dev|cloud|internal|"
    r"local|lan|corp|cluster|svc|edu|gov|de|fr|uk|cn|jp)\b"
)
_USER_PATH_RE = re.compile(r"(/(?:home|Users|users|scratch|work|u|mnt/home|data/home)/)([A-Za-z0-9._-]{1,64})(?=/|\b)")
_WIN_USER_RE = re.compile(r"(?i)([A-Z]:\\Users\\)([^\\\s]{1,64})")
_NCCL_HOST_RE = re.compile(
    r"(?m)^([ \t]{0,4}(?:\[[^\]\n]{1,40}\][ :]{0,2})?)([A-Za-z][A-Za-z0-9_.-]{0,62})(?=:\d{1,8}:\d{1,8} \[)"
)
_KEEP_WORDS = {"localhost"}


def redact_text(text: str) -> str:
    """Every secret of the tested list replaced, and NUL written as `\\x00` (PostgreSQL text and jsonb cannot
    hold it). Always applied before storing."""
    if not text:
        return text
    text = text.replace("\x00", "\\x00")
    folded = text.casefold()  # casefold, not lower: (?i) matches "ſ" for "s", and "ſ".lower() is "ſ"
    for name, pattern, replacement in _SECRET_RULES:
        if any(needle in folded for needle in _NEEDLES[name]):
            text, replaced = pattern.subn(replacement, text)
            if replaced:
                folded = text.casefold()
    if "\n" in text or len(text) >= 60:
        text = _KEY_BODY_RE.sub(REDACTED + " (key material)", text)
    return text


def mask_text(text: str, hosts: Iterable[str] = ()) -> str:
    """Host names, IP addresses and user names in paths replaced by <host>, <ip>, <user>."""
    if not text:
        return text
    for host in sorted({h for h in hosts if h and len(h) >= 3 and h not in _KEEP_WORDS}, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(host)}(?![A-Za-z0-9_-])", "<host>", text)
    text = _IPV6_RE.sub("<ip>", text)
    text = _IPV4_RE.sub("<ip>", text)
    text = _FQDN_RE.sub("<host>", text)
    text = _NCCL_HOST_RE.sub(lambda m: m.group(1) + "<host>", text)
    text = _USER_PATH_RE.sub(lambda m: m.group(1) + "<user>", text)
    text = _WIN_USER_RE.sub(lambda m: m.group(1) + "<user>", text)
    return text


def clean_text(text: str, *, mask: bool = False, hosts: Iterable[str] = ()) -> str:
    text = redact_text(text)
    return mask_text(text, hosts) if mask else text


def clean_data(data: Any, *, mask: bool = False, hosts: Iterable[str] = ()) -> Any:
    """Every string in a JSON-like structure cleaned (dictionary keys too)."""
    hosts = tuple(hosts)
    if isinstance(data, str):
        return clean_text(data, mask=mask, hosts=hosts)
    if isinstance(data, dict):
        return {
            clean_data(k, mask=mask, hosts=hosts) if isinstance(k, str) else k: clean_data(v, mask=mask, hosts=hosts)
            for k, v in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [clean_data(v, mask=mask, hosts=hosts) for v in data]
    return data


def clean_marked(pre: str, hit: str, post: str, *, mask: bool = False, hosts: Iterable[str] = ()) -> tuple[str, int, int]:
    """A line with a highlighted part, cleaned; the highlight survives when no secret straddles its edges."""
    hosts = tuple(hosts)
    whole = clean_text(pre + hit + post, mask=mask, hosts=hosts)
    parts = [clean_text(p, mask=mask, hosts=hosts) for p in (pre, hit, post)]
    if "".join(parts) == whole:
        return whole, len(parts[0]), len(parts[0]) + len(parts[1])
    return whole, 0, 0
