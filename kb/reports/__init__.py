"""Shareable reports, "did this fix it?" votes and the curators' report (issue 10).

- `redact.py`: secrets out (always) and host names, addresses and user names masked (on request), before
  anything is stored.
- `templates.py`: log lines to masked templates, clustered Drain-style, and a draft signature per cluster.
- `store.py`: saving reports, votes, match counts and unmatched templates; expiry and purge.
"""
