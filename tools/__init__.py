"""Tooling around the site, not part of it: the benchmark's log generators and timers, the scorer of the project's
labelled logs, the catalogue extractors. Tests, `make bench`, `make score` and `make loadtest` use it; no view does."""
