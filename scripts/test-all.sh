#!/usr/bin/env bash
# `make test`: every test of the project, one build. Steps, in order:
#   1. cargo test --workspace in the `ci` profile: the unit tests, the integration binary of the
#      proxy (tests/main.rs: every suite, MariaDB servers started per test), the sandbox's,
#      the SQL crate's and the benchmark kit's tests; the tessera binary comes out of the same
#      build (target/ci/tessera);
#   2. tests/compat/run.sh: the drivers, ORMs and the mariadb CLI against that binary;
#   3. scripts/sysbench-sharded.sh: sysbench over 2 groups x 2 shards, 0 errors.
# At the end a table of how long each step took (also when a step fails).
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
PROFILE=${TEST_PROFILE:-ci}
BIN=$PWD/target/$PROFILE/tessera
declare -a NAMES=() SECS=()
status=0

step() { # name command...
    local name=$1 start=$SECONDS
    shift
    echo "=== make test: $name"
    "$@"
    local rc=$?
    NAMES+=("$name")
    SECS+=($((SECONDS - start)))
    ((rc == 0)) || { echo "=== make test: $name FAILED (exit $rc)"; status=$rc; }
    return $rc
}

report() {
    echo
    echo "make test: time per step"
    local i total=0
    for i in "${!NAMES[@]}"; do
        printf '  %-44s %5ss\n' "${NAMES[$i]}" "${SECS[$i]}"
        total=$((total + SECS[i]))
    done
    printf '  %-44s %5ss\n' total "$total"
}
trap report EXIT

step "build (cargo test --no-run, profile $PROFILE)" \
    "$CARGO" test --workspace --profile "$PROFILE" --no-run || exit
step "cargo test --workspace" "$CARGO" test --workspace --profile "$PROFILE" || exit
step "compat suites (tests/compat/run.sh)" env TESSERA_BIN="$BIN" bash tests/compat/run.sh || exit
step "sysbench over shards (scripts/sysbench-sharded.sh)" \
    env TESSERA_BIN="$BIN" bash scripts/sysbench-sharded.sh || exit
exit $status
