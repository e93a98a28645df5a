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

# The rank named in the environment that process $1 started with, left in $found_rank (empty when none): RANK
# (torchrun, accelerate and deepspeed workers), else OMPI_COMM_WORLD_RANK (Open MPI), else SLURM_PROCID (srun,
# one task per GPU). The last two count only for a python command line that is not a launcher (torchrun under
# srun is not a rank, nor is a shell srun started). Pure bash, so scanning every process of a node stays fast.
rank_of() {
  local entry cmd='' rank='' world='' task=''
  found_rank=''
  while IFS= read -r -d '' entry || [ -n "$entry" ]; do
    case "$entry" in
      RANK=*) rank=${entry#RANK=} ;;
      OMPI_COMM_WORLD_RANK=*) world=${entry#*=} ;;
      SLURM_PROCID=*) task=${entry#*=} ;;
    esac
  done 2>/dev/null < "/proc/$1/environ" || return 0
  if [ -n "$rank" ]; then
    found_rank=$rank
    return 0
  fi
  while IFS= read -r -d '' entry || [ -n "$entry" ]; do
    cmd="$cmd $entry"
  done 2>/dev/null < "/proc/$1/cmdline" || true
  case "$cmd" in
    *python*) ;;
    *) return 0 ;;
  esac
  case "$cmd" in
    *torchrun*|*torch.distributed.run*|*torch.distributed.launch*|*accelerate*|*deepspeed.launcher*) task='' ;;
  esac
  found_rank=${world:-$task}
}

# This node's training ranks, one "PID RANK" line each. A rank is known by the rank its launcher put in its
# environment, not by its command name: that is python or python3.X on most PyTorch releases, pt_main_thread on
# 2.3 and 2.4 (import torch renamed the main thread, PyTorch PRs 121170 and 134066), or whatever a launcher ran
# (torchrun --no-python). A process whose parent has the same rank is that rank's helper (a DataLoader or compile
# worker) and is left out. Another user's environment needs root: python processes among them are "PID ?".
rank_pids() {
  local dir pid stat parent rank entry cmd
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    if [ ! -r "$dir/environ" ]; then
      cmd=''
      while IFS= read -r -d '' entry || [ -n "$entry" ]; do
        cmd="$cmd $entry"
      done 2>/dev/null < "$dir/cmdline" || true
      case "$cmd" in
        *python*) printf '%s ?\n' "$pid" ;;
      esac
      continue
    fi
    rank_of "$pid"
    rank=$found_rank
    [ -n "$rank" ] || continue
    stat=''
    read -r stat 2>/dev/null < "$dir/stat" || true
    stat=${stat##*) }
    parent=${stat#* }
    parent=${parent%% *}
    rank_of "${parent:-0}"
    [ "$found_rank" != "$rank" ] || continue
    printf '%s %s\n' "$pid" "$rank"
  done
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
