#!/bin/sh
# The diagnosis suite, each scenario twice, with its table and its score
# asserted (docs/benchmarks.md, "Diagnosis"). Needs root, strace, taskset,
# python3, ip and nft (.ci/run installs them).
#   STRATA_DIAG_RUNS=N   runs per scenario (2)
#   STRATA_DIAG_ONLY=S   only the scenarios whose name contains S
#   STRATA_DIAG_KEEP=1   keep each sweep's report (its path is printed)
set -e
cd "$(dirname "$0")/.."
exec cargo test --release -p strata --test diagnosis -- --ignored --nocapture --test-threads 1 full_suite
