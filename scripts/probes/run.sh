#!/usr/bin/env bash
# Run one of the bpftrace scripts in this folder against a live strata node.
#   scripts/probes/run.sh SCRIPT.bt PID [SECONDS]
# Fills in the path of the process's binary (probes are attached by path)
# and the interval, then runs bpftrace on that process (as root).
set -euo pipefail
script=$1 pid=$2 seconds=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
[[ -f $script ]] || script="$here/$script"
bin=$(readlink -f "/proc/$pid/exe")
prog=$(sed -e "s|STRATA_BIN|$bin|g" -e "s|SECONDS|$seconds|g" "$script")
exec bpftrace -p "$pid" -e "$prog"
