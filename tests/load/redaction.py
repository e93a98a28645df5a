"""`make loadtest`: redaction and masking stay linear: 50 MB of `-----BEGIN RSA PRIVATE KEY-----` lines (129 s before
issue 34, B3), then, for each rule, its five adversarial shapes of tests/kb/web/test_redaction.py in one text of 2 MB
(50 MB each would take about 12 minutes on 2 cores: every rule is linear, about 0.5 s a megabyte all together).
Each text must be cleaned within 2 s of CPU a megabyte."""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from kb.reports.redact import clean_text  # noqa: E402
from tests.kb.web.test_redaction import MASK_EXAMPLES, RULE_EXAMPLES, adversarial_texts  # noqa: E402

BIG = int(os.environ.get("KB_LOAD_REDACTION_BYTES", 50 * 1024 * 1024))
SIZE = 2 * 1024 * 1024
PER_MB_S = 2.0


def main() -> int:
    worst = (0.0, "")
    failed = 0
    texts = [("B3", "-----BEGIN RSA PRIVATE KEY-----\n" * (BIG // 32))]
    texts += [
        (example, "\n".join(adversarial_texts(example, SIZE // 5))) for example in list(RULE_EXAMPLES.values()) + MASK_EXAMPLES
    ]
    for example, text in texts:
        started = time.process_time()
        clean_text(text, mask=True)
        took = time.process_time() - started
        worst = max(worst, (took, example[:40]))
        if took > PER_MB_S * len(text) / 1024**2:
            failed += 1
            print(f"redaction: too slow: {took:.1f} s on {len(text) // 1024**2} MB built from {example[:40]!r}")
    print(
        f"redaction: {BIG // 1024**2} MB of BEGIN lines, {SIZE // 1024**2} MB per rule, slowest {worst[0]:.1f} s ({worst[1]!r}); {failed} over the bound"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
