#!/usr/bin/env bash
: @about@
#
# Usage:
#   ./fix.sh --check              read-only checks on this node; changes nothing
: @usage_comment@
set -euo pipefail

say() { printf '%s\n' "$@"; }
note() { printf 'fix.sh: %s\n' "$@" >&2; }

# Starts one read-only check; a missing tool is reported and skipped, never fatal.
have() {
  printf '\n== %s\n' "$2"
  if command -v "$1" >/dev/null 2>&1; then
    return 0
  fi
  say "   skipped: '$1' is not installed or not on PATH"
  return 1
}
failed() { say "   (exited with status $1)"; }

# The installed PyTorch release as MAJOR.MINOR, empty when python or torch is missing; never fails.
torch_release() {
  local py
  py=$(command -v python || command -v python3 || true)
  if [ -n "$py" ]; then
    "$py" -c 'import torch; print(".".join(torch.__version__.split(".")[:2]))' 2>/dev/null || true
  fi
}

# True when release $1 (MAJOR.MINOR) is $2 (MAJOR.MINOR) or newer; false when $1 is empty or odd.
release_at_least() {
  case "$1" in
    [0-9]*.[0-9]*) ;;
    *) return 1 ;;
  esac
  local major=${1%%.*} minor=${1#*.} want_major=${2%%.*} want_minor=${2#*.}
  minor=${minor%%[!0-9]*}
  [ "$major" -gt "$want_major" ] || { [ "$major" -eq "$want_major" ] && [ "${minor:-0}" -ge "$want_minor" ]; }
}

checks() {
  say 'Read-only checks. Nothing is changed.'
  : @checks@
  say '' 'Settings that ./fix.sh LAUNCH COMMAND... would apply:'
  show_settings
  : @checks_done@
}

# The settings, exported so the launcher and every rank it starts inherit them.
settings() {
  : @settings@
}

show_settings() {
  : @show_settings@
}

# Changes made on this node before the launch.
actions() {
  : @actions@
}

# What this wrapper cannot change for you: flags, code and the platform.
instructions() {
  : @instructions@
}

: @launch@

usage() {
  : @usage_title@
  say 'usage: ./fix.sh --check             read-only checks; changes nothing'
  : @usage_run@
}

case "${1:-}" in
  --check)
    checks
    ;;
  -h|--help)
    usage
    ;;
  ''|-*)
    usage >&2
    exit 2
    ;;
  *)
    settings
    actions
    instructions
    launch "$@"
    ;;
esac
