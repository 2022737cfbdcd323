#!/usr/bin/env bash
# Installs what Tessera's build, tests, demo and benchmarks need on Debian 12.
#
# Idempotent: each step checks first and prints one line per thing checked; when
# everything is present it changes nothing and returns in well under a second.
# `apt-get update` runs at most once, and only when a package must be installed.
#
# Usage: scripts/install-deps.sh        (as root, or with sudo available)
set -euo pipefail

APT_UPDATED=0
MISSING_APT=()
FAILED=0

log() { printf '%-22s %s\n' "$1" "$2"; }

# Runs a command as root (directly, or through sudo when we are not root).
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "error: need root (or sudo) to run: $*" >&2
        exit 1
    fi
}

# Queues a Debian package for installation unless it is already installed.
check_apt_pkg() {
    local pkg=$1
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        log "pkg $pkg" "ok ($(dpkg-query -W -f='${Version}' "$pkg"))"
    else
        log "pkg $pkg" "missing: will install"
        MISSING_APT+=("$pkg")
    fi
}

# Installs every queued package in one apt-get call.
apt_install_missing() {
    if [[ ${#MISSING_APT[@]} -eq 0 ]]; then
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: apt-get not found; install by hand: ${MISSING_APT[*]}" >&2
        exit 1
    fi
    if [[ $APT_UPDATED -eq 0 ]]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        APT_UPDATED=1
    fi
    with_services_disabled as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${MISSING_APT[@]}"
    log "apt" "installed ${MISSING_APT[*]}"
    MISSING_APT=()
}

# Runs "$@" with a policy-rc.d that stops package scripts from starting services:
# the sandbox runs its own mariadbd instances, a system one on :3306 would only waste
# memory. An existing policy-rc.d is left alone.
with_services_disabled() {
    local policy=/usr/sbin/policy-rc.d
    if [[ -e $policy ]]; then
        "$@"
        return
    fi
    as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    local rc=0
    "$@" || rc=$?
    as_root rm -f "$policy"
    return "$rc"
}

# Checks that a program is on PATH (or in the sbin dirs, for server binaries).
check_program() {
    local prog=$1 path
    path=$(PATH="$PATH:/usr/sbin:/usr/local/sbin" command -v "$prog" || true)
    if [[ -n $path ]]; then
        log "bin $prog" "ok ($path)"
    else
        log "bin $prog" "MISSING"
        FAILED=1
    fi
}

# MariaDB server and client: used by crates/sandbox (demo, integration tests, bench).
step_mariadb() {
    check_apt_pkg mariadb-server
    check_apt_pkg mariadb-client
}

# Load generator for the benchmark kit.
step_bench() {
    check_apt_pkg sysbench
}

# Rust toolchain: rustup is preinstalled on the dev and CI machines; we do not install it.
step_rust() {
    local cargo_bin
    cargo_bin=$(command -v cargo || true)
    if [[ -z $cargo_bin && -x ${CARGO_HOME:-$HOME/.cargo}/bin/cargo ]]; then
        cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin/cargo
    fi
    if [[ -n $cargo_bin ]]; then
        log "cargo" "ok ($("$cargo_bin" --version 2>/dev/null || echo "$cargo_bin"))"
        if ! command -v cargo >/dev/null 2>&1; then
            log "cargo" "note: add $(dirname "$cargo_bin") to PATH"
        fi
    else
        log "cargo" "MISSING"
        echo "error: cargo not found. Install Rust with rustup (then 'source ~/.cargo/env')," >&2
        echo "       or add the directory holding cargo to PATH." >&2
        FAILED=1
    fi
}

# Verifies that the installed packages provide the programs we actually run.
step_verify_programs() {
    check_program mariadbd
    check_program mariadb
    check_program mariadb-install-db
    check_program sysbench
}

main() {
    step_mariadb
    step_bench
    # ---------------------------------------------------------------------------
    # Add further steps here (each a step_* function above that queues apt
    # packages with check_apt_pkg or checks/installs something itself), e.g. the
    # compat-test dependencies: python packages, go, node, java drivers.
    # ---------------------------------------------------------------------------
    apt_install_missing
    step_verify_programs
    step_rust

    if [[ $FAILED -ne 0 ]]; then
        echo "install-deps: some dependencies are missing (see above)" >&2
        exit 1
    fi
    echo "install-deps: all dependencies present"
}

main "$@"
