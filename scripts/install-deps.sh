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

# MariaDB server and client: used by crates/sandbox (demo, integration tests, bench);
# mariadb-test: MariaDB's own regression suite, run directly and through Tessera (`make mtr`).
step_mariadb() {
    check_apt_pkg mariadb-server
    check_apt_pkg mariadb-client
    check_apt_pkg mariadb-test
}

# The fleet: etcd (v3 API; `tessera --etcd`, `tessera ctl`, the fleet tests and the cluster
# demo start their own) and HAProxy (the load balancer the fleet tests and demo put in front).
step_fleet() {
    check_apt_pkg etcd-server
    check_apt_pkg haproxy
}

# Load generator for the benchmark kit, a font for its charts, taskset (util-linux) for --pin,
# and valgrind for scripts/bench-instructions.sh.
step_bench() {
    check_apt_pkg sysbench
    check_apt_pkg valgrind
    check_apt_pkg fonts-dejavu-core
    check_apt_pkg util-linux
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
    check_program etcd
    check_program haproxy
}

# Python drivers for the compat suite tests/compat/python (PyMySQL, mysql-connector-python,
# mysqlclient, pytest) and the ORMs of tests/compat/orm (SQLAlchemy, Django), pinned in
# tests/compat/{python,orm}/requirements.txt, in the venv tests/compat/.venv. mysqlclient is
# built from source: it needs libmariadb-dev, pkg-config, gcc + libc6-dev and Python's headers
# (python3-dev, queued only when the python3 of the venv has no Python.h).
# Fast path: the venv's python runs and a stamp holds the hash of both requirement files.
install_python_compat() {
    local root venv req orm_req stamp want python
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    venv=$root/tests/compat/.venv
    req=$root/tests/compat/python/requirements.txt
    orm_req=$root/tests/compat/orm/requirements.txt
    stamp=$venv/.requirements.sha256
    if [[ ! -f $req ]]; then
        log "python compat" "skipped (no $req)"
        return 0
    fi
    local files=("$req") reqs=() f
    [[ -f $orm_req ]] && files+=("$orm_req")
    for f in "${files[@]}"; do
        reqs+=(-r "$f")
    done
    want=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
    if [[ -f $stamp && $(<"$stamp") == "$want" ]] && "$venv/bin/python" -c '' 2>/dev/null; then
        log "python compat" "ok ($venv)"
        return 0
    fi
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        check_apt_pkg python3
        check_apt_pkg python3-venv
        apt_install_missing
    fi
    # What building mysqlclient needs.
    check_apt_pkg libmariadb-dev
    check_apt_pkg pkg-config
    check_apt_pkg gcc
    check_apt_pkg libc6-dev
    python=python3
    "$venv/bin/python" -c '' 2>/dev/null && python=$venv/bin/python
    if ! "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
        check_apt_pkg python3-dev
    fi
    apt_install_missing
    log "python compat" "installing ${files[*]#"$root/"} into $venv"
    if ! "$venv/bin/python" -c '' 2>/dev/null; then
        python3 -m venv --clear "$venv" || { log "python compat" "FAILED: python3 -m venv"; FAILED=1; return 0; }
    fi
    printf '*\n' >"$venv/.gitignore" # keep the venv out of git
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q "${reqs[@]}"; then
        log "python compat" "FAILED: pip install ${reqs[*]}"
        FAILED=1
        return 0
    fi
    printf '%s\n' "$want" >"$stamp"
    log "python compat" "ok (installed)"
}

# Go, Node and Java drivers for tests/compat/{go,node,java}: go-sql-driver/mysql (Go module
# cache, pinned by go.sum), mysql2 (node_modules from package-lock.json), MySQL Connector/J
# (~/.m2, then compiled). Toolchains: go >= 1.24, node >= 18 + npm, java >= 17 + maven; missing
# ones are queued from apt (Debian's golang-go is older than the go.mod needs: install Go by hand).
# Each suite's `run.sh --prepare` does the work and returns at once when everything is present.
install_jvm_go_node_compat() {
    local root suite out
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    command -v java >/dev/null 2>&1 || check_apt_pkg openjdk-17-jdk-headless
    command -v mvn >/dev/null 2>&1 || check_apt_pkg maven
    command -v node >/dev/null 2>&1 || check_apt_pkg nodejs
    command -v npm >/dev/null 2>&1 || check_apt_pkg npm
    command -v go >/dev/null 2>&1 || check_apt_pkg golang-go
    apt_install_missing
    for suite in go node java; do
        prepare_compat_suite "$root" "$suite"
    done
}

# prepare_compat_suite ROOT SUITE: runs tests/compat/SUITE/run.sh --prepare (fetches and builds
# what the suite needs; fast when everything is present) and logs the outcome.
prepare_compat_suite() {
    local root=$1 suite=$2 out
    if [[ ! -f $root/tests/compat/$suite/run.sh ]]; then
        log "$suite compat" "skipped (no tests/compat/$suite/run.sh)"
        return 0
    fi
    if out=$(bash "$root/tests/compat/$suite/run.sh" --prepare 2>&1 </dev/null); then
        log "$suite compat" "ok"
    else
        log "$suite compat" "FAILED: ${out//$'\n'/ | }"
        FAILED=1
    fi
}

# PHP for tests/compat/php: PDO with pdo_mysql (mysqlnd) from Debian's php-cli and php-mysql
# (no composer); the suite's `run.sh --prepare` then checks that pdo_mysql loads.
install_php_compat() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    if [[ -f $root/tests/compat/php/run.sh ]]; then
        check_apt_pkg php-cli
        check_apt_pkg php-mysql
        apt_install_missing
    fi
    prepare_compat_suite "$root" php
}

main() {
    step_mariadb
    step_bench
    step_fleet
    # ---------------------------------------------------------------------------
    # Add further steps here (each a step_* function above that queues apt
    # packages with check_apt_pkg or checks/installs something itself), e.g. the
    # compat-test dependencies: python packages, go, node, java drivers.
    # ---------------------------------------------------------------------------
    install_python_compat
    install_jvm_go_node_compat
    install_php_compat
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
