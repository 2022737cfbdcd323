#!/usr/bin/env bash
# MariaDB's own regression suite (`main` suite of mariadb-test, mariadb-test-run.pl --extern)
# against a running server, once directly and once through Tessera; compares the results.
# See tests/mtr/README.md.
#
#   TESSERA_BIN=target/release/tessera bash scripts/mariadb-test-run.sh [TEST...]
#
# Environment (all optional):
#   TESSERA_BIN        the proxy binary (default target/release/tessera)
#   MTR_TESTS          test names (space separated) instead of the whole selection; the
#                      command line arguments do the same
#   MTR_DIR            the mysql-test directory (default /usr/share/mysql/mysql-test)
#   MTR_OUT            where the results go (default target/mtr)
#   MTR_TIMEOUT        minutes per test case before it counts as failed (default 2)
#   MTR_SERIAL=1       run the two sides one after the other (default: both at once, each
#                      against its own server)
#   MTR_CHUNK          tests per mariadb-test-run.pl invocation (default 30); between two
#                      chunks the server is cleaned and Tessera restarted, so that what a
#                      failed test left behind cannot fail the rest of the run
#   MTR_CONFIRM_MAX    at most this many suspects (passed directly, failed through Tessera) are
#                      re-run through Tessera on a cleaned server (default 300) ...
#   MTR_CONFIRM_CHUNK  ... this many per mariadb-test-run.pl invocation (default 10)
#   MTR_KEEP=1         keep the scratch directory (servers' vardirs) after the run
#
# Each side gets its own MariaDB, started by mariadb-test-run.pl itself (--start-and-exit: the
# server and system tables a normal MTR run uses, with InnoDB, partition, sequence, archive and
# blackhole enabled, since an --extern run cannot add server options per test). The direct side
# runs as root over TCP; the Tessera side runs as Tessera's user root (empty password), which
# Tessera serves from its pooled backend connections to the same account root.
#
# Output: per side a PASS/FAIL/SKIP line per test in $MTR_OUT/{direct,tessera}.results, the
# counts in $MTR_OUT/summary.txt, the suspects' .reject/.log files under $MTR_OUT/failures/.
# Exit status: 0 when every test that passes directly passes through Tessera or is listed in
# tests/mtr/inherent.txt; 1 otherwise; 2 when the environment could not be set up.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${TESSERA_BIN:=$ROOT/target/release/tessera}"
: "${MTR_DIR:=/usr/share/mysql/mysql-test}"
: "${MTR_OUT:=$ROOT/target/mtr}"
: "${MTR_TIMEOUT:=2}"
: "${MTR_SERIAL:=0}"
: "${MTR_CONFIRM_MAX:=300}"
: "${MTR_CONFIRM_CHUNK:=10}"
: "${MTR_KEEP:=0}"
: "${MTR_CHUNK:=30}"
MTR_LISTS=$ROOT/tests/mtr
INHERENT=$MTR_LISTS/inherent.txt
SKIPLIST=$MTR_LISTS/skip.txt

log() { printf '[mtr] %s\n' "$*" >&2; }
die() {
    log "$*"
    exit 2
}

# ---------------------------------------------------------------- prerequisites
[[ -x $MTR_DIR/mariadb-test-run.pl ]] || die "no $MTR_DIR/mariadb-test-run.pl (install mariadb-test: scripts/install-deps.sh)"
[[ -x $TESSERA_BIN ]] || die "TESSERA_BIN=$TESSERA_BIN is not an executable (cargo build --release --bin tessera)"
command -v mariadb >/dev/null || die "no mariadb client in PATH"
command -v perl >/dev/null || die "no perl"
TESSERA_BIN=$(cd "$(dirname "$TESSERA_BIN")" && pwd)/$(basename "$TESSERA_BIN")

# ---------------------------------------------------------------- cleanup
WORK=$(mktemp -d /tmp/tessera-mtr.XXXXXX)
TESSERA_PID=""
SERVER_PIDFILES=()
JOB_PIDS=()
cleanup() {
    local pid f i
    for pid in "${JOB_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || continue
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    [[ -f $WORK/tessera.pid ]] && TESSERA_PID=$(cat "$WORK/tessera.pid")
    if [[ -n $TESSERA_PID ]] && kill -0 "$TESSERA_PID" 2>/dev/null; then
        kill -TERM "$TESSERA_PID" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do kill -0 "$TESSERA_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$TESSERA_PID" 2>/dev/null || true
    fi
    for f in "${SERVER_PIDFILES[@]}"; do
        [[ -f $f ]] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        [[ $pid =~ ^[0-9]+$ ]] || continue
        kill -TERM "$pid" 2>/dev/null || continue
        for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    if [[ $MTR_KEEP == 1 ]]; then
        log "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$MTR_OUT"
rm -rf "${MTR_OUT:?}/failures" "$MTR_OUT"/*.results "$MTR_OUT"/*.txt "$MTR_OUT"/logs
mkdir -p "$MTR_OUT/logs" "$MTR_OUT/failures"

# ---------------------------------------------------------------- selection
# Every main test except those that cannot run against a server somebody else started:
# per-test server options or config (.opt, -master.opt, .cnf, -master.sh, .combinations: an
# --extern run ignores them), server restarts/shutdowns, and tests/mtr/skip.txt.
MAIN=$MTR_DIR/main
excluded=$MTR_OUT/excluded.txt
selected=$MTR_OUT/selected.txt
: >"$excluded"
: >"$selected"
declare -A SKIP_REASON=()
if [[ -f $SKIPLIST ]]; then
    while read -r name reason; do
        [[ -z $name || $name == \#* ]] && continue
        SKIP_REASON[$name]=$reason
    done <"$SKIPLIST"
fi
RESTART_RE='restart_mysqld|shutdown_mysqld|kill_mysqld|start_mysqld|restart_server|shutdown_server|kill_and_restart|crash_mysqld|wait_until_disconnected|wait_until_connected_again|\.expect'
exclusion() { # name -> reason or nothing
    local b=$MAIN/$1 s
    [[ -f $b.test ]] || {
        echo "no such test in $MAIN"
        return
    }
    if [[ -n ${SKIP_REASON[$1]:-} ]]; then
        echo "skip.txt: ${SKIP_REASON[$1]}"
        return
    fi
    for s in .opt -master.opt -slave.opt .cnf -master.sh .combinations; do
        if [[ -e $b$s ]]; then
            echo "needs server options ($1$s)"
            return
        fi
    done
    if grep -qE "$RESTART_RE" "$b.test"; then
        echo "restarts or stops the server"
    fi
}
requested=()
if (($# > 0)); then
    requested=("$@")
elif [[ -n ${MTR_TESTS:-} ]]; then
    read -r -a requested <<<"$MTR_TESTS"
fi
if ((${#requested[@]} == 0)); then
    for f in "$MAIN"/*.test; do
        t=${f##*/}
        requested+=("${t%.test}")
    done
fi
TESTS=()
for t in "${requested[@]}"; do
    t=${t#main.}
    why=$(exclusion "$t")
    if [[ -n $why ]]; then
        printf '%s\t%s\n' "$t" "$why" >>"$excluded"
    else
        TESTS+=("$t")
        printf '%s\n' "$t" >>"$selected"
    fi
done
((${#TESTS[@]} > 0)) || die "nothing selected (see $excluded)"
log "${#requested[@]} tests asked for, ${#TESTS[@]} selected, $(wc -l <"$excluded") excluded (see $excluded)"

# ---------------------------------------------------------------- servers and Tessera
# mariadb-test-run.pl --start-and-exit bootstraps a vardir and leaves mysqld.1 running.
SERVER_OPTS=()
while read -r o; do
    [[ -n $o ]] && SERVER_OPTS+=("--mysqld=$o")
done <"$MTR_DIR/include/have_innodb.opt"
SERVER_OPTS+=(--mysqld=--loose-enable-partition --mysqld=--loose-sequence
    --mysqld=--loose-archive --mysqld=--plugin-load-add=ha_archive.so
    --mysqld=--loose-blackhole --mysqld=--plugin-load-add=ha_blackhole.so)

declare -A PORT=()
start_server() { # side
    local side=$1 vardir=$WORK/$1 out=$MTR_OUT/logs/$1-server.log
    SERVER_PIDFILES+=("$vardir/run/mysqld.1.pid")
    (cd "$MTR_DIR" && perl ./mariadb-test-run.pl --vardir="$vardir" --start-and-exit "${SERVER_OPTS[@]}" alias) \
        </dev/null >"$out" 2>&1 || {
        tail -n 20 "$out" >&2
        die "could not start the $side server (see $out)"
    }
    PORT[$side]=$(awk '{ for (i = 1; i < NF; i++) if ($i == "mysqld.1" && $(i + 1) ~ /^[0-9]+$/) { print $(i + 1); exit } }' "$out")
    [[ -n ${PORT[$side]} ]] || die "no port for the $side server in $out"
    log "$side: MariaDB on 127.0.0.1:${PORT[$side]} (vardir $vardir)"
}

free_port() {
    perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport, "\n"'
}

sql() { # port sql...: as root over TCP
    local port=$1
    shift
    mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -N -B -e "$*"
}

write_tessera_config() { # backend port
    cat >"$WORK/tessera.toml" <<EOF
# mariadb-test-run.sh: one plain group; Tessera's user root (empty password) runs on the
# backend account root, the account of the direct run; TLS with the certificates the
# MTR server uses (std_data), so that the suite's SSL tests see the same server certificate;
# TLS to the backend too (tls = true), as a deployment that encrypts clients encrypts both
# legs: session status (Ssl_cipher, what ssl_ca reads) is the backend connection's.
[server]
listen = "127.0.0.1:$2"
tls_cert = "$MTR_DIR/std_data/server-cert.pem"
tls_key = "$MTR_DIR/std_data/server-key.pem"
[admin]
http_listen = "127.0.0.1:0"
[[users]]
name = "root"
password = ""
[[groups]]
name = "g0"
user = "root"
password = ""
tls = true
primary = { address = "127.0.0.1:$1" }
EOF
    cp "$WORK/tessera.toml" "$MTR_OUT/logs/tessera.toml"
}

stop_tessera() {
    local pid i
    [[ -f $WORK/tessera.pid ]] || return 0
    pid=$(cat "$WORK/tessera.pid")
    rm -f "$WORK/tessera.pid"
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

start_tessera() { # (re)starts Tessera on PORT[tessera_proxy]
    local pid i
    stop_tessera
    "$TESSERA_BIN" --config "$WORK/tessera.toml" </dev/null >>"$MTR_OUT/logs/tessera-proxy.log" 2>&1 &
    pid=$!
    echo "$pid" >"$WORK/tessera.pid"
    for ((i = 0; i < 300; i++)); do
        sql "${PORT[tessera_proxy]}" "select 1" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    tail -n 20 "$MTR_OUT/logs/tessera-proxy.log" >&2
    log "tessera did not come up on 127.0.0.1:${PORT[tessera_proxy]}"
    return 1
}

start_server direct
start_server tessera
PORT[tessera_proxy]=$(free_port)
write_tessera_config "${PORT[tessera]}" "${PORT[tessera_proxy]}"
start_tessera || die "tessera did not start (see $MTR_OUT/logs/tessera-proxy.log)"
log "tessera: 127.0.0.1:${PORT[tessera_proxy]} in front of 127.0.0.1:${PORT[tessera]}"

# What a clean server holds (databases, accounts, global variables), to put it back between
# chunks and before each confirmation run. Both servers start alike; the lists come from one.
GLOBALS_SQL="select variable_name, variable_type, global_value from information_schema.system_variables
  where variable_scope <> 'SESSION ONLY' and read_only = 'NO' and global_value is not null"
declare -A BASE_DBS=() BASE_USERS=()
while read -r d; do BASE_DBS[$d]=1; done < <(sql "${PORT[tessera]}" "select schema_name from information_schema.schemata")
while IFS=$'\t' read -r u h; do BASE_USERS["$u@$h"]=1; done < <(sql "${PORT[tessera]}" "select user, host from mysql.user")
for side in direct tessera; do
    sql "${PORT[$side]}" "$GLOBALS_SQL" >"$WORK/$side.globals"
done

# reset_server SIDE: drops the databases and accounts tests created, recreates `test`, sets back
# global variables a failed test changed and did not restore (one by one: the few that cannot
# be set back are left alone) and kills leftover client connections.
reset_server() {
    local side=$1 port=${PORT[$1]} d u h id stmts=""
    while read -r id; do
        stmts+="KILL $id;"
    done < <(sql "$port" "select id from information_schema.processlist where id <> connection_id() and command <> 'Daemon' and user <> 'system user'")
    while read -r d; do
        [[ -n ${BASE_DBS[$d]:-} ]] || stmts+="DROP DATABASE IF EXISTS \`$d\`;"
    done < <(sql "$port" "select schema_name from information_schema.schemata")
    while IFS=$'\t' read -r u h; do
        [[ -n ${BASE_USERS["$u@$h"]:-} ]] || stmts+="DROP USER IF EXISTS '$u'@'$h';"
    done < <(sql "$port" "select user, host from mysql.user")
    # `test` only when a test left something in it (dropping a database costs seconds).
    if [[ $(sql "$port" "select (select count(*) from information_schema.tables where table_schema = 'test')
        + (select count(*) from information_schema.routines where routine_schema = 'test')
        + (select count(*) from information_schema.events where event_schema = 'test')" 2>/dev/null) != 0 ]]; then
        stmts+="DROP DATABASE IF EXISTS test; CREATE DATABASE test;"
    fi
    sql "$port" "$stmts" >/dev/null 2>&1 || mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -f \
        -e "$stmts" >/dev/null 2>&1 || true
    sql "$port" "$GLOBALS_SQL" >"$WORK/$side.globals.now" 2>/dev/null || return 0
    awk -F'\t' 'NR == FNR { base[$1] = $3; type[$1] = $2; next }
        ($1 in base) && base[$1] != $3 {
            v = base[$1]
            if (type[$1] !~ /INT|DOUBLE/) { gsub(/\\/, "\\\\", v); gsub(/\047/, "\\\047", v); v = "\047" v "\047" }
            printf "SET GLOBAL %s = %s;\n", $1, v
        }' "$WORK/$side.globals" "$WORK/$side.globals.now" >"$WORK/$side.globals.sql"
    if [[ -s $WORK/$side.globals.sql ]]; then
        mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -f <"$WORK/$side.globals.sql" >/dev/null 2>&1 || true
    fi
}

# ---------------------------------------------------------------- runs
mtr_run() { # side port log tests... : mariadb-test-run.pl --extern, output to log
    local side=$1 port=$2 out=$3
    shift 3
    (cd "$MTR_DIR" && exec perl ./mariadb-test-run.pl \
        --extern host=127.0.0.1 --extern port="$port" --extern user=root --extern protocol=tcp \
        --vardir="$WORK/$side" --force --max-test-fail=0 --retry=0 --parallel=1 \
        --testcase-timeout="$MTR_TIMEOUT" --suite-timeout=600 --suite=main "$@") \
        </dev/null >"$out" 2>&1 || true
}

# Backend transactions still open once every client is gone: only Tessera can have left them.
open_transactions() { # side
    sql "${PORT[$1]}" "select count(*) from information_schema.innodb_trx" 2>/dev/null || echo 0
}

# run_side SIDE TESTS...: the tests in chunks of MTR_CHUNK, the server cleaned (and Tessera
# restarted) before each chunk; one log, logs/SIDE.log.
run_side() {
    local side=$1 port i n k=0 leaked chunk
    shift
    local all=("$@")
    port=${PORT[$side]}
    [[ $side == tessera ]] && port=${PORT[tessera_proxy]}
    : >"$MTR_OUT/logs/$side.log"
    : >"$MTR_OUT/$side-leaks.txt"
    for ((i = 0; i < ${#all[@]}; i += MTR_CHUNK)); do
        k=$((k + 1))
        chunk=("${all[@]:i:MTR_CHUNK}")
        reset_server "$side"
        if [[ $side == tessera ]]; then
            start_tessera || {
                echo "tessera did not restart before chunk $k" >>"$MTR_OUT/logs/$side.log"
                return 1
            }
        fi
        mtr_run "$side" "$port" "$WORK/$side-chunk.log" "${chunk[@]}"
        {
            echo "=== chunk $k: ${chunk[0]} .. ${chunk[-1]}"
            cat "$WORK/$side-chunk.log"
        } >>"$MTR_OUT/logs/$side.log"
        sleep 0.5
        leaked=$(open_transactions "$side")
        if [[ $leaked =~ ^[0-9]+$ ]] && ((leaked > 0)); then
            printf 'chunk %d (%s .. %s): %s transaction(s) open on the backend after the chunk\n' \
                "$k" "${chunk[0]}" "${chunk[-1]}" "$leaked" >>"$MTR_OUT/$side-leaks.txt"
        fi
        n=$(grep -cE '\[ (pass|fail|skipped|disabled) \]' "$MTR_OUT/logs/$side.log" || true)
        log "$side: $n of ${#all[@]} tests done"
    done
}

# "name RESULT detail" per test from an MTR log (the last verdict wins).
parse_results() { # log
    perl -ne '
        if (/^(?:worker\[\d+\]\s+)?main\.(\S+)\s+\[ (pass|fail|skipped|disabled) \]\s*(.*?)\s*$/) {
            my ($n, $r, $d) = ($1, $2, $3);
            $r = { pass => "PASS", fail => "FAIL", skipped => "SKIP", disabled => "SKIP" }->{$r};
            $d = "" if $r eq "PASS";
            $res{$n} = "$r\t$d"; push @order, $n unless $seen{$n}++;
        }
        END { print "$_\t$res{$_}\n" for sort @order }' "$1"
}

# The MTR report of a failed test (error, diff) and its .reject/.log into failures/DIR/TEST/.
save_failure() { # side test mtr-log dir
    local side=$1 t=$2 mlog=$3 dir=$MTR_OUT/failures/$4/$2 f
    mkdir -p "$dir"
    for f in "$WORK/$side/log/$t.reject" "$WORK/$side/log/$t.log"; do
        [[ -f $f ]] && cp "$f" "$dir/" 2>/dev/null
    done
    awk -v t="main.$t" '$1 == t && /\[ fail \]/ { on = 1; print; next }
        on && ($1 ~ /^main\./ || /^=== chunk/) { exit } on { print }' "$mlog" >"$dir/report.txt" 2>/dev/null || true
}

started=$SECONDS
log "running ${#TESTS[@]} tests directly and through Tessera, $MTR_CHUNK per chunk ($([[ $MTR_SERIAL == 1 ]] && echo one side after the other || echo both sides at the same time))"
if [[ $MTR_SERIAL == 1 ]]; then
    run_side direct "${TESTS[@]}"
    run_side tessera "${TESTS[@]}"
else
    set -m
    run_side direct "${TESTS[@]}" &
    JOB_PIDS+=($!)
    run_side tessera "${TESTS[@]}" &
    JOB_PIDS+=($!)
    set +m
    for pid in "${JOB_PIDS[@]}"; do wait "$pid" || true; done
    JOB_PIDS=()
fi
log "both sides done in $((SECONDS - started))s"
sql "${PORT[direct]}" "select 1" >/dev/null 2>&1 || log "warning: the direct server no longer answers"
sql "${PORT[tessera]}" "select 1" >/dev/null 2>&1 || die "the server behind Tessera no longer answers"

parse_results "$MTR_OUT/logs/direct.log" >"$MTR_OUT/direct.results"
parse_results "$MTR_OUT/logs/tessera.log" >"$MTR_OUT/tessera.results"

declare -A DIRECT=() VIA=() VIA_DETAIL=() INHERENT_REASON=()
while IFS=$'\t' read -r n r d; do DIRECT[$n]=$r; done <"$MTR_OUT/direct.results"
while IFS=$'\t' read -r n r d; do VIA[$n]=$r VIA_DETAIL[$n]=$d; done <"$MTR_OUT/tessera.results"
if [[ -f $INHERENT ]]; then
    while read -r name reason; do
        [[ -z $name || $name == \#* ]] && continue
        INHERENT_REASON[$name]=${reason:-"(no reason given)"}
    done <"$INHERENT"
fi

# ---------------------------------------------------------------- confirmation
# A test that passed directly but failed through Tessera may have tripped over what an earlier
# failed test of its chunk left behind: run the suspects again, MTR_CONFIRM_CHUNK at a time,
# through a fresh Tessera on a cleaned server. Their final verdict is that of the re-run.
suspects=()
for t in "${TESTS[@]}"; do
    [[ ${DIRECT[$t]:-} == PASS && ${VIA[$t]:-MISSING} != PASS ]] && suspects+=("$t")
done
declare -A FLAKY=()
: >"$MTR_OUT/confirm.results"
: >"$MTR_OUT/logs/confirm.log"
if ((${#suspects[@]} > 0)); then
    for t in "${suspects[@]}"; do save_failure tessera "$t" "$MTR_OUT/logs/tessera.log" tessera; done
    again=("${suspects[@]:0:MTR_CONFIRM_MAX}")
    log "${#suspects[@]} tests passed directly but not through Tessera; re-running ${#again[@]} of them, $MTR_CONFIRM_CHUNK per chunk, on a cleaned server"
    for ((i = 0; i < ${#again[@]}; i += MTR_CONFIRM_CHUNK)); do
        chunk=("${again[@]:i:MTR_CONFIRM_CHUNK}")
        reset_server tessera
        start_tessera || die "tessera did not restart (see $MTR_OUT/logs/tessera-proxy.log)"
        for t in "${chunk[@]}"; do rm -f "$WORK/tessera/log/$t.reject" "$WORK/tessera/log/$t.log"; done
        mtr_run tessera "${PORT[tessera_proxy]}" "$WORK/confirm.log" "${chunk[@]}"
        {
            echo "=== confirmation chunk: ${chunk[0]} .. ${chunk[-1]}"
            cat "$WORK/confirm.log"
        } >>"$MTR_OUT/logs/confirm.log"
        parse_results "$WORK/confirm.log" >"$WORK/confirm.results"
        for t in "${chunk[@]}"; do
            r=$(awk -F'\t' -v t="$t" '$1 == t { print $2 "\t" $3 }' "$WORK/confirm.results")
            [[ -n $r ]] || r=$'FAIL\tno verdict in the re-run'
            printf '%s\t%s\n' "$t" "$r" >>"$MTR_OUT/confirm.results"
            if [[ ${r%%$'\t'*} == PASS ]]; then
                FLAKY[$t]=1
                VIA[$t]=PASS
            else
                save_failure tessera "$t" "$WORK/confirm.log" "tessera/$t/again"
                mv "$MTR_OUT/failures/tessera/$t/again/$t/"* "$MTR_OUT/failures/tessera/$t/again/" 2>/dev/null || true
                rmdir "$MTR_OUT/failures/tessera/$t/again/$t" 2>/dev/null || true
            fi
        done
        log "confirmation: $((i + ${#chunk[@]})) of ${#again[@]}"
    done
fi

# ---------------------------------------------------------------- summary
n_sel=${#TESTS[@]}
n_dpass=0 n_dfail=0 n_dskip=0 n_vpass=0 n_vfail=0 n_vskip=0 n_inh=0 n_unexpl=0 n_flaky=0
unexplained=() inherent_hit=() stale=() via_only=()
for t in "${TESTS[@]}"; do
    d=${DIRECT[$t]:-MISSING} v=${VIA[$t]:-MISSING}
    case $d in PASS) n_dpass=$((n_dpass + 1)) ;; SKIP) n_dskip=$((n_dskip + 1)) ;; *) n_dfail=$((n_dfail + 1)) ;; esac
    case $v in PASS) n_vpass=$((n_vpass + 1)) ;; SKIP) n_vskip=$((n_vskip + 1)) ;; *) n_vfail=$((n_vfail + 1)) ;; esac
    [[ -n ${FLAKY[$t]:-} ]] && n_flaky=$((n_flaky + 1))
    if [[ $d == PASS && $v != PASS ]]; then
        if [[ -n ${INHERENT_REASON[$t]:-} ]]; then
            n_inh=$((n_inh + 1))
            inherent_hit+=("$t")
        else
            n_unexpl=$((n_unexpl + 1))
            unexplained+=("$t")
        fi
    elif [[ -n ${INHERENT_REASON[$t]:-} ]]; then
        stale+=("$t ($d directly, $v through Tessera)")
    fi
    [[ $d != PASS && $v == PASS ]] && via_only+=("$t ($d directly)")
done

{
    echo "MariaDB main suite, directly and through Tessera ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo "server: $(sql "${PORT[direct]}" 'select version()' 2>/dev/null); $("$TESSERA_BIN" --version 2>/dev/null)"
    echo "tests asked for:                         ${#requested[@]}"
    echo "excluded before the run:                 $(wc -l <"$excluded")   (excluded.txt)"
    echo "selected:                                $n_sel"
    echo "directly: passed                         $n_dpass"
    echo "directly: skipped by the test or runner  $n_dskip"
    echo "directly: failed (out of scope)          $n_dfail"
    echo "through Tessera: passed                  $n_vpass"
    echo "through Tessera: skipped                 $n_vskip"
    echo "through Tessera: failed                  $n_vfail"
    echo "passed directly, failed through Tessera: $((n_inh + n_unexpl))"
    echo "  inherent (tests/mtr/inherent.txt):     $n_inh"
    echo "  unexplained:                           $n_unexpl"
    echo "passed through Tessera only in the re-run: $n_flaky"
    if ((${#inherent_hit[@]} > 0)); then
        echo
        echo "inherent:"
        for t in "${inherent_hit[@]}"; do printf '  %-40s %s\n' "$t" "${INHERENT_REASON[$t]}"; done
    fi
    if ((${#unexplained[@]} > 0)); then
        echo
        echo "UNEXPLAINED (passed directly, failed through Tessera; see failures/tessera/NAME/):"
        for t in "${unexplained[@]}"; do printf '  %-40s %s\n' "$t" "${VIA_DETAIL[$t]:-}"; done
    fi
    if ((n_flaky > 0)); then
        echo
        echo "failed through Tessera in the full run, passed when re-run on a cleaned server:"
        for t in "${!FLAKY[@]}"; do echo "  $t"; done | sort
    fi
    for side in direct tessera; do
        if [[ -s $MTR_OUT/$side-leaks.txt ]]; then
            echo
            echo "$side: transactions left open on the server after all clients were gone:"
            sed 's/^/  /' "$MTR_OUT/$side-leaks.txt"
        fi
    done
    if ((${#stale[@]} > 0)); then
        echo
        echo "listed in inherent.txt but not failing through Tessera only:"
        printf '  %s\n' "${stale[@]}"
    fi
    if ((${#via_only[@]} > 0)); then
        echo
        echo "passed through Tessera only:"
        printf '  %s\n' "${via_only[@]}"
    fi
} >"$MTR_OUT/summary.txt"
printf '%s\n' "${unexplained[@]}" | sed '/^$/d' >"$MTR_OUT/unexplained.txt"
cat "$MTR_OUT/summary.txt"
echo "results: $MTR_OUT (summary.txt, direct.results, tessera.results, confirm.results, failures/, logs/)"
((n_unexpl == 0))
