"""Measure how well the curators' clustering groups real log lines: the hand-written Drain (kb/reports/templates.py)
against Drain3 (the maintained implementation, in memory, no persistence handler; what the site now runs), on the
real pastes.

    .venv/bin/python tools/template_clustering.py [--sets tuned heldout ...] [-v]

The lines are those the curators' report would cluster: each paste repaired as the diagnosis reads it (hard-wrapped
lines re-joined), lines that report a problem (templates.INTERESTING_RE) and could become a draft. The truth: the
message catalogue (content/catalogue/messages) names the program message a line prints (Catalogue.match, its first
whole-line hit); two lines belong together exactly when they print the same catalogue entry. Lines the catalogue does
not know are clustered too (as on the site) but not scored. Both methods see the same masked templates
(templates.line_template), so only the grouping differs; Drain3 is also run on the redacted lines with its own
masking off and on (its default configuration), to see whether the masking or the grouping decides.

Scores: pairwise precision (pairs put together that print the same message), pairwise recall (pairs printing the
same message that were put together), F1, the adjusted Rand index, purity, and the number of clusters.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from math import comb
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from diagnosis.catalogue import Catalogue  # noqa: E402
from diagnosis.text import REPAIR_LIMIT, log_text, paste_repair  # noqa: E402
from kb.reports import templates as tpl  # noqa: E402
from kb.reports.redact import mask_text, redact_text  # noqa: E402

PASTES = ROOT / "tests" / "fixtures" / "pastes"
# heldout6 and heldout7 are held out: never read here.
SETS = ("tuned", "heldout", "heldout2", "heldout3", "heldout4", "heldout5")


def paste_lines(paste_set: str) -> list[tuple[str, str]]:
    """(paste name, line) for each line of each paste of a set that the curators' report would cluster."""
    out = []
    for path in sorted((PASTES / paste_set).glob("*.log")):
        text = log_text(path.read_bytes())[0]
        if len(text) <= REPAIR_LIMIT:
            text = paste_repair(text).text
        for line in text.split("\n"):
            if len(line) >= 12 and tpl.INTERESTING_RE.search(line) and tpl._draftable(tpl.line_template(line)):
                out.append((f"{paste_set}/{path.name}", line))
    return out


def truth(catalogue: Catalogue, line: str) -> str | None:
    whole = [hit.id for hit in catalogue.match(line) if hit.fragment is None]
    return whole[0] if whole else None


# The hand-written Drain that kb/reports/templates.py held before Drain3 was adopted, kept here to rerun the comparison.
SIMILARITY = 0.5


def similarity(a: list[str], b: list[str]) -> float:
    """Drain's simSeq: the share of positions where two templates of equal length hold the same token."""
    if len(a) != len(b) or not a:
        return 0.0
    return sum(1 for x, y in zip(a, b) if x == y) / len(a)


def merged(a: list[str], b: list[str]) -> list[str]:
    return [x if x == y else tpl.WILDCARD for x, y in zip(a, b)]


def handwritten(lines: list[str]) -> list[int]:
    """Cluster index per line: same length and first token, then the most similar cluster at 0.5 or above."""
    clusters: list[list[str]] = []
    out = []
    for line in lines:
        tokens = tpl.line_template(line).split(" ")
        best, best_sim = None, SIMILARITY - 1e-9
        for index, other in enumerate(clusters):
            if other[:1] == tokens[:1]:
                sim = similarity(tokens, other)
                if sim > best_sim:
                    best, best_sim = index, sim
        if best is None:
            clusters.append(tokens)
            out.append(len(clusters) - 1)
        else:
            clusters[best] = merged(clusters[best], tokens)
            out.append(best)
    return out


def drain3_miner(masking: bool) -> Callable[[str], int]:
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    if not masking:  # what the site runs: kb/reports/templates.drain()
        tree = tpl.drain()
        return lambda line: tree.add_log_message(line)[0].cluster_id

    config = TemplateMinerConfig()
    config.profiling_enabled = False
    if masking:  # Drain3's own example masking: numbers, hex, IPs
        from drain3.masking import MaskingInstruction

        config.masking_instructions = [
            MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)(\d+\.\d+\.\d+\.\d+)((?=[^A-Za-z0-9])|$)", "IP"),
            MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)(0x[a-f0-9A-F]+)((?=[^A-Za-z0-9])|$)", "HEX"),
            MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)([\-\+]?\d+)((?=[^A-Za-z0-9])|$)", "NUM"),
        ]
    miner = TemplateMiner(persistence_handler=None, config=config)
    return lambda line: miner.add_log_message(line)["cluster_id"]


def drain3(lines: list[str], prepare: Callable[[str], str], masking: bool = False) -> list[int]:
    add = drain3_miner(masking)
    return [add(prepare(line)) for line in lines]


def scores(labels: list[str], clusters: list[int]) -> dict[str, float]:
    """Pairwise precision/recall/F1, adjusted Rand index and purity of `clusters` against `labels`."""
    n = len(labels)
    joint = Counter(zip(labels, clusters))
    by_label = Counter(labels)
    by_cluster = Counter(clusters)
    together_same = sum(comb(c, 2) for c in joint.values())
    together = sum(comb(c, 2) for c in by_cluster.values())
    same = sum(comb(c, 2) for c in by_label.values())
    precision = together_same / together if together else 1.0
    recall = together_same / same if same else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    expected = together * same / comb(n, 2) if n > 1 else 0.0
    top = (together + same) / 2
    ari = (together_same - expected) / (top - expected) if top != expected else 1.0
    majority = Counter()
    for (label, cluster), count in joint.items():
        majority[cluster] = max(majority[cluster], count)
    purity = sum(majority.values()) / n if n else 1.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "ari": ari,
        "purity": purity,
        "clusters": len({c for c in clusters}),
        "messages": len(by_label),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("-v", "--verbose", action="store_true", help="print the clusters that mix messages")
    args = parser.parse_args()
    catalogue = Catalogue.load()
    rows = [row for paste_set in args.sets for row in paste_lines(paste_set)]
    lines = [line for _, line in rows]
    labels = [truth(catalogue, line) for line in lines]
    scored = [i for i, label in enumerate(labels) if label is not None]
    print(
        f"{len(lines)} lines from {len({p for p, _ in rows})} pastes ({', '.join(args.sets)}); {len(scored)} name a catalogue message"
    )

    def redacted(line: str) -> str:
        return mask_text(redact_text(line.strip()))

    methods: dict[str, Callable[[], list[int]]] = {
        "hand-written Drain, masked templates": lambda: handwritten(lines),
        "Drain3, masked templates (the site)": lambda: drain3(lines, tpl.line_template),
        "Drain3, redacted lines, no masking": lambda: drain3(lines, redacted),
        "Drain3, redacted lines, its masking": lambda: drain3(lines, redacted, masking=True),
    }
    print(f"{'method':40} {'precision':>9} {'recall':>7} {'F1':>6} {'ARI':>6} {'purity':>7} {'clusters':>8}")
    for name, run in methods.items():
        clusters = run()
        result = scores([labels[i] for i in scored], [clusters[i] for i in scored])
        print(
            f"{name:40} {result['precision']:9.3f} {result['recall']:7.3f} {result['f1']:6.3f} {result['ari']:6.3f}"
            f" {result['purity']:7.3f} {result['clusters']:8d}  ({result['messages']} messages)"
        )
        if args.verbose:
            members: dict[int, Counter] = {}
            for i in scored:
                members.setdefault(clusters[i], Counter())[labels[i]] += 1
            for cluster, counter in members.items():
                if len(counter) > 1:
                    print("   mixed:", dict(counter))
    return 0


if __name__ == "__main__":
    sys.exit(main())
