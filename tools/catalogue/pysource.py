"""Read message templates from Python source: logging calls, warnings.warn, raise Exc("..."), by AST.

A template keeps the wording as printed with its values as fields: f-strings and str.format become brace
style (`{rank}`), %-formatting (an explicit `%` or logging's lazy arguments) stays printf style (`%s`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

LOG_METHODS = {
    "debug": "DEBUG",
    "info": "INFO",
    "warning": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
    "fatal": "CRITICAL",
}
LOGGER_NAME = re.compile(r"^_?(log|logger|LOG|LOGGER|logging|_logger|log_|default_logger)$|_logger$|_log$")


@dataclass(frozen=True)
class PyMessage:
    line: int
    severity: str  # DEBUG INFO WARNING ERROR CRITICAL RAISE
    style: str  # printf | brace
    format: str


def _field_name(node: ast.AST) -> str:
    """A short field name for an interpolated expression: its last identifier (self.rank → rank)."""
    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", ast.unparse(node))
    skip = {"self", "str", "repr", "len", "int", "float", "format", "join", "os", "e", "_", "cls"}
    useful = [n for n in names if n not in skip]
    return (useful[-1] if useful else "value")[:40]


def _brace(node: ast.AST) -> str | None:
    """Brace-style text of a str expression built from literals, f-strings and + ; None when not a message."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(part, ast.FormattedValue):
                out.append("{" + _field_name(part.value) + "}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _brace(node.left), _brace(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "{" + _field_name(node.left) + "}") + (
            right if right is not None else "{" + _field_name(node.right) + "}"
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        # "{} ..".format(a) / "{name}".format(name=..): fields already in brace style; name the positional ones.
        text = node.func.value.value
        names = [_field_name(a) for a in node.args]
        counter = iter(range(len(names)))

        def name(m: re.Match[str]) -> str:
            inner = m.group(1)
            if inner == "":
                i = next(counter, None)
                return "{" + (names[i] if i is not None else "value") + "}"
            if inner.isdigit() and int(inner) < len(names):
                return "{" + names[int(inner)] + "}"
            return "{" + re.split(r"[!:.\[]", inner)[0] + "}"

        return re.sub(r"(?<!\{)\{([^{}]*)\}(?!\})", name, text)
    return None


def _message(node: ast.AST, lazy_args: bool) -> tuple[str, str] | None:
    """(style, template) of a message argument."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        if isinstance(node.left.value, str):
            return "printf", node.left.value
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if lazy_args:
            return "printf", node.value
        return "brace", node.value.replace("{", "{{").replace("}", "}}")
    text = _brace(node)
    return ("brace", text) if text is not None else None


def _callee(func: ast.AST) -> tuple[str, str] | None:
    """(receiver, method) of `receiver.method(...)`."""
    if isinstance(func, ast.Attribute):
        base = func.value
        if isinstance(base, ast.Name):
            return base.id, func.attr
        if isinstance(base, ast.Attribute):
            return base.attr, func.attr
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name):
            return base.func.id, func.attr  # get_logger().warning(...)
    return None


def python_messages(source: str, keep_info: bool, module: str | None = None, keep_asserts: bool = False) -> list[PyMessage]:
    """Every message the module can print through logging, warnings, or an exception it raises; with `module`, also
    the `module.Class:` head a traceback prints for each exception class the module defines; with `keep_asserts`,
    the message of each `assert cond, message` (a failed one prints 'AssertionError: message': DeepSpeed's op
    builders report a missing CUDA toolkit that way up to 0.12.3)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[PyMessage] = []
    for node in ast.walk(tree):
        if (
            module
            and isinstance(node, ast.ClassDef)
            and any(re.search(r"(Error|Exception)$", ast.unparse(b)) for b in node.bases)
        ):
            out.append(PyMessage(node.lineno, "RAISE", "brace", f"{module}.{node.name}:"))
            continue
        if keep_asserts and isinstance(node, ast.Assert) and node.msg is not None:
            found = _message(node.msg, lazy_args=False)
            if found:
                out.append(PyMessage(node.lineno, "RAISE", *found))
            continue
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            found = _message(node.exc.args[0], lazy_args=False)
            if found:
                out.append(PyMessage(node.lineno, "RAISE", *found))
            continue
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = _callee(node.func)
        if callee is None:
            continue
        receiver, method = callee
        if receiver == "warnings" and method == "warn":
            found = _message(node.args[0], lazy_args=False)
            if found:
                out.append(PyMessage(node.lineno, "WARNING", *found))
        elif method in LOG_METHODS and (
            LOGGER_NAME.search(receiver)
            or receiver in ("get_logger", "getLogger")
            or (receiver == "self" and method == "warning")
        ):  # self.warning: DeepSpeed's op builders print their warnings through a method of that name
            severity = LOG_METHODS[method]
            if severity == "DEBUG" or (severity == "INFO" and not keep_info):
                continue
            found = _message(node.args[0], lazy_args=len(node.args) > 1)
            if found:
                out.append(PyMessage(node.lineno, severity, *found))
    return sorted(out, key=lambda m: (m.line, m.format))
