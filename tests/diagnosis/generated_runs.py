"""The logs real torchrun runs on CPU printed (tests/fixtures/logs/generated, scenario h of
tests/fixtures/generators/train_gloo_faults.py), and what the tests ask of a diagnosis of one."""

from __future__ import annotations

from pathlib import Path

from diagnosis.engine import CONFIDENT, Diagnosis, log_diagnose
from diagnosis.rules import Rules

GENERATED = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "generated"
RELEASES = ("torch212", "torch2130", "torch2141")  # the releases each scenario was run with


def run(rules: Rules, path: Path) -> Diagnosis:
    return log_diagnose([(path.name, path.read_bytes())], rules)


def confident(diagnosis: Diagnosis) -> list[str]:
    return [m.slug for m in diagnosis.matches if m.confidence >= CONFIDENT]
