#!/usr/bin/env bash
# CLI compat suite: the `mariadb` command-line client and `mariadb-dump` through Tessera.
# Run by tests/compat/run.sh (main environment); run alone, it starts a demo itself.
#
#   bash tests/compat/cli/run.sh
#   COMPAT_FILTER=kill bash tests/compat/cli/run.sh   only the KILL checks
#
# Every check compares real output (batch mode, -N -B) with the expected text; the dump
# checks compare what went through Tessera with MariaDB's own answer. The session checks
# (`status`, warnings after a failed USE, SET NAMES ... COLLATE, identity functions, KILL from a
# second client) expect MariaDB's own answers: they pass with tests/compat/run.sh --direct.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/compat/lib.sh
source "$here/../lib.sh"
compat_install_traps

# The basic checks run on the shared `main` environment. The checks that leave session state
# behind on Tessera's backend connections (the leak checks, mariadb-dump's SET SQL_MODE='', the
# reload) run on a private demo (`cli`, --pool-max 1), so that a Tessera bug there cannot
# disturb the suites that run after this one.
only_kill=0
case ${COMPAT_FILTER:-} in
    "") ;;
    kill) only_kill=1 ;;
    *) echo "COMPAT_FILTER=$COMPAT_FILTER: unknown (known: kill)" >&2; exit 2 ;;
esac
standalone=0
if [[ -z ${TESSERA_PORT:-} ]]; then
    standalone=1
    launch_tessera main --replicas 1
fi
((only_kill)) || launch_tessera cli --pool-max 1
if ((standalone)); then
    await_tessera main
fi
: "${TESSERA_HOST:=127.0.0.1}" "${TESSERA_USER:=app}" "${TESSERA_PASSWORD:=app}"
for tool in mariadb mariadb-dump; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "cli suite: $tool not found (scripts/install-deps.sh installs mariadb-client)" >&2
        exit 1
    fi
done

compat_tmpdir >/dev/null # sets COMPAT_TMP (removed by stop_all)
work=$COMPAT_TMP/cli
mkdir -p "$work"

# Through Tessera / directly on MariaDB (user tessera). Batch mode, no column names. Bounded:
# a client that hangs is killed after 120 s (exit 124), so a hang fails its check.
tq() {
    timeout 120 mariadb --protocol=TCP -h"$TESSERA_HOST" -P"$TESSERA_PORT" -u"$TESSERA_USER" \
        -p"$TESSERA_PASSWORD" --default-character-set=utf8mb4 -N -B "$@"
}
dq() {
    timeout 120 mariadb --protocol=TCP -h"${MARIADB_HOST:-127.0.0.1}" -P"$MARIADB_PORT" \
        -u"${MARIADB_USER:-tessera}" -p"${MARIADB_PASSWORD:-tessera}" \
        --default-character-set=utf8mb4 -N -B "$@"
}

# expect_output NAME EXPECTED CMD...: CMD must exit 0 and print exactly EXPECTED on stdout.
expect_output() {
    local name=$1 want=$2 got rc=0
    shift 2
    got=$("$@" 2>"$work/stderr") || rc=$?
    if ((rc != 0)); then
        compat_fail "$name" "exit $rc: $(head -c 400 "$work/stderr")"
    elif [[ $got != "$want" ]]; then
        compat_fail "$name" "output differs"
        diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -20 | sed 's/^/         /' || true
    else
        compat_pass "$name"
    fi
}

# expect_error NAME ERRNO CMD...: CMD must exit 1 with "ERROR ERRNO" on stderr.
expect_error() {
    local name=$1 errno=$2 rc=0
    shift 2
    "$@" >"$work/stdout" 2>"$work/stderr" || rc=$?
    if ((rc != 1)); then
        compat_fail "$name" "exit $rc (want 1); stderr: $(head -c 300 "$work/stderr")"
    elif ! grep -q "^ERROR $errno " "$work/stderr"; then
        compat_fail "$name" "stderr lacks 'ERROR $errno': $(head -c 300 "$work/stderr")"
    else
        compat_pass "$name"
    fi
}

echo "cli suite: mariadb client $(mariadb --version | sed 's/.*Distrib \([^,]*\),.*/\1/') -> 127.0.0.1:$TESSERA_PORT"

# --- KILL from a second client (COMPAT_FILTER=kill runs only these) -------------------------
# Client A is one `mariadb` process on a pipe (a coprocess: -n flushes each answer, --comments
# keeps the marker comment in the statement); client B is a second `mariadb` process. Every
# wait on A is bounded (read -t); a hang fails the check that waited.

# wait_running MARKER: polls every server (primary and replicas, admin account) until a
# statement containing MARKER runs; 10 s at most. SHOW FULL PROCESSLIST rather than
# information_schema.PROCESSLIST, which materializes an Aria temporary table in /tmp, where
# another sandbox MariaDB starting up deletes it (and this server then crashes freeing it).
wait_running() {
    local marker=$1 deadline=$((SECONDS + 10)) port ports=()
    IFS=, read -ra ports <<<"$MARIADB_PORT,${MARIADB_REPLICA_PORTS:-}"
    while ((SECONDS < deadline)); do
        for port in "${ports[@]}"; do
            [[ -n $port ]] || continue
            if dq -P"$port" -e "SHOW FULL PROCESSLIST" 2>/dev/null | grep -qF -- "$marker"; then
                return 0
            fi
        done
        sleep 0.02 # poll interval
    done
    return 1
}

# victim_send SQL / victim_read REGEX SECONDS: talk to client A; victim_read stores the first
# output line matching REGEX in $victim_line and fails after SECONDS (or when A exited).
victim_send() { printf '%s\n' "$1" >&"${VICTIM[1]}"; }
victim_read() {
    local re=$1 deadline=$((SECONDS + $2)) line left
    victim_line=""
    while ((SECONDS < deadline)); do
        left=$((deadline - SECONDS))
        IFS= read -r -t "$left" line <&"${VICTIM[0]}" || return 1
        if [[ $line =~ $re ]]; then
            victim_line=$line
            return 0
        fi
    done
    return 1
}

kill_checks() {
    local id marker t0 ms other
    coproc VICTIM {
        exec timeout 120 mariadb --protocol=TCP -h"$TESSERA_HOST" -P"$TESSERA_PORT" -u"$TESSERA_USER" \
            -p"$TESSERA_PASSWORD" --default-character-set=utf8mb4 -N -B -n --force --comments 2>&1
    }
    local victim_pid=$VICTIM_PID
    victim_send "SELECT CONNECTION_ID();"
    if ! victim_read '^[0-9]+$' 15; then
        compat_fail "KILL checks: client A answers SELECT CONNECTION_ID()" "no answer within 15 s"
        kill "$victim_pid" 2>/dev/null || true
        return 0
    fi
    id=$victim_line
    other=$(tq -e "SELECT CONNECTION_ID()" 2>&1 || true)
    if [[ $other =~ ^[0-9]+$ && $other != "$id" ]]; then
        compat_pass "a second client has another CONNECTION_ID() ($id, $other)"
    else
        compat_fail "a second client has another CONNECTION_ID()" "A: $id, B: $other"
    fi

    expect_output "KILL QUERY of an idle client answers OK" "" tq -e "KILL QUERY $id"
    victim_send "SELECT 'idle ok', CONNECTION_ID();"
    if victim_read '^idle ok' 15 && [[ $victim_line == "idle ok	$id" ]]; then
        compat_pass "client A usable after KILL QUERY while idle"
    else
        compat_fail "client A usable after KILL QUERY while idle" "got '$victim_line'"
    fi

    marker="cli-kill-query-$$-$RANDOM"
    t0=${EPOCHREALTIME/./}
    victim_send "SELECT SLEEP(5) /* $marker */;"
    if ! wait_running "$marker"; then
        compat_fail "KILL QUERY of a running SELECT SLEEP(5)" "no statement with $marker in any server's process list after 10 s"
    else
        expect_output "KILL QUERY of a running statement answers OK" "" tq -e "KILL QUERY $id"
        if ! victim_read '^(ERROR|[0-9]+$)' 30; then
            compat_fail "KILL QUERY ends A's SELECT SLEEP(5) early" "no answer from A within 30 s (hang)"
        else
            ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
            if [[ $victim_line =~ ^(ERROR\ 1317\ |1$) ]] && ((ms < 4000)); then
                compat_pass "KILL QUERY ends A's SELECT SLEEP(5) early ($victim_line, ${ms} ms)"
            else
                compat_fail "KILL QUERY ends A's SELECT SLEEP(5) early" "A got '$victim_line' after ${ms} ms; want ERROR 1317 or 1 well before 5 s"
            fi
        fi
    fi
    victim_send "SELECT 'alive', CONNECTION_ID();"
    if victim_read '^(alive|ERROR)' 15 && [[ $victim_line == "alive	$id" ]]; then
        compat_pass "client A usable after KILL QUERY, same CONNECTION_ID()"
    else
        compat_fail "client A usable after KILL QUERY, same CONNECTION_ID()" "got '$victim_line'"
    fi

    expect_output "KILL CONNECTION answers OK" "" tq -e "KILL $id"
    victim_send "SELECT 'after kill';"
    if victim_read '^(after kill|ERROR)' 15 && [[ $victim_line == ERROR* ]]; then
        compat_pass "client A's next statement after KILL fails ($victim_line)"
    else
        compat_fail "client A's next statement after KILL fails" "got '${victim_line:-no answer within 15 s}'"
    fi
    other=$(tq -e "SELECT 'new', CONNECTION_ID()" 2>&1 || true)
    if [[ $other =~ ^new$'\t'[0-9]+$ && $other != "new	$id" ]]; then
        compat_pass "a new client works after KILL"
    else
        compat_fail "a new client works after KILL" "got '$other'"
    fi
    exec {VICTIM[1]}>&-
    kill "$victim_pid" 2>/dev/null || true
    wait "$victim_pid" 2>/dev/null || true

    expect_error "KILL QUERY of an unknown id: ERROR 1094" 1094 tq -e "KILL QUERY 999999999"
    expect_error "KILL of an unknown id: ERROR 1094" 1094 tq -e "KILL 999999999"
}

if ((only_kill)); then
    kill_checks
    echo
    compat_report "cli checks (COMPAT_FILTER=kill)"
    exit
fi

# --- simple queries with -e ---------------------------------------------------------------
expect_output "select with -e" "2" tq -e "SELECT 1 + 1"
expect_output "unicode round trip" "héllo wörld 🚀	68C3A96C6C6F2077C3B6726C6420F09F9A80" \
    tq -e "SELECT 'héllo wörld 🚀', HEX('héllo wörld 🚀')"
expect_output "NULL and empty string" "NULL		0" tq -e "SELECT NULL, '', 0"
expect_output "several columns and rows" "$(printf '1\tAda\tLondon\n2\tGrace\tNew York\n3\tLinus\tHelsinki')" \
    tq -e "SELECT id, name, city FROM demo.customers ORDER BY id"
expect_output "database argument" "demo	3" tq demo -e "SELECT DATABASE(), COUNT(*) FROM customers"
expect_output "USE then unqualified names" "$(printf 'demo\n159.49')" \
    tq -e "USE demo; SELECT DATABASE(); SELECT SUM(amount) FROM orders"
show_dbs=$(tq -e "SHOW DATABASES" 2>&1 || true)
if grep -qx demo <<<"$show_dbs" && grep -qx information_schema <<<"$show_dbs"; then
    compat_pass "SHOW DATABASES lists demo"
else
    compat_fail "SHOW DATABASES lists demo" "got: $(tr '\n' ' ' <<<"$show_dbs")"
fi
expect_output "column names without -N" "$(printf 'a\tb\n1\tx')" \
    mariadb --protocol=TCP -h"$TESSERA_HOST" -P"$TESSERA_PORT" -u"$TESSERA_USER" \
    -p"$TESSERA_PASSWORD" -B -e "SELECT 1 AS a, 'x' AS b"

# --- scripts on stdin ---------------------------------------------------------------------
script="DROP DATABASE IF EXISTS compat_cli;
CREATE DATABASE compat_cli CHARACTER SET utf8mb4;
USE compat_cli;
CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, s VARCHAR(40), d DECIMAL(10,2), ts DATETIME(6));
INSERT INTO t (s, d, ts) VALUES ('one', 1.50, '2024-01-02 03:04:05.123456'), ('twö 🚀', -2.25, NULL);
SELECT LAST_INSERT_ID(), ROW_COUNT();
SELECT id, s, d, ts FROM t ORDER BY id;
SELECT COUNT(*) FROM t;"
expect_output "multi-statement script on stdin" \
    "$(printf '1\t2\n1\tone\t1.50\t2024-01-02 03:04:05.123456\n2\ttwö 🚀\t-2.25\tNULL\n2')" \
    tq <<<"$script"

cat >"$work/source.sql" <<'SQL'
CREATE TABLE IF NOT EXISTS compat_cli.src (k VARCHAR(10) PRIMARY KEY, v INT);
INSERT INTO compat_cli.src VALUES ('a', 1), ('b', 2), ('c', 3);
UPDATE compat_cli.src SET v = v * 10 WHERE k <> 'b';
SELECT k, v FROM compat_cli.src ORDER BY k;
SQL
expect_output "source script with CREATE/INSERT/UPDATE/SELECT" "$(printf 'a\t10\nb\t2\nc\t30')" \
    tq -e "source $work/source.sql"
expect_output "DELIMITER and a stored procedure" "$(printf '3\n42')" tq compat_cli <<'SQL'
DROP PROCEDURE IF EXISTS sum_src;
DELIMITER //
CREATE PROCEDURE sum_src(OUT total INT)
BEGIN
  DECLARE n INT;
  SELECT COUNT(*) INTO n FROM src;
  SELECT n;
  SELECT SUM(v) INTO total FROM src;
END //
DELIMITER ;
CALL sum_src(@total);
SELECT @total;
SQL

# --- errors ---------------------------------------------------------------------------------
expect_error "unknown table exits 1 with ERROR 1146" 1146 tq -e "SELECT * FROM demo.no_such_table"
expect_error "syntax error exits 1 with ERROR 1064" 1064 tq -e "SELEC 1"
expect_error "duplicate key exits 1 with ERROR 1062" 1062 \
    tq -e "INSERT INTO compat_cli.src VALUES ('a', 1)"
expect_error "unknown database argument exits 1 with ERROR 1049" 1049 tq compat_no_such_db -e "SELECT 1"
expect_error "wrong password exits 1 with ERROR 1045" 1045 \
    mariadb --protocol=TCP -h"$TESSERA_HOST" -P"$TESSERA_PORT" -uapp -pwrong -e "SELECT 1"
if grep -q "ERROR 1146 (42S02) at line 1: Table 'demo.no_such_table' doesn't exist" <(
    tq -e "SELECT * FROM demo.no_such_table" 2>&1 || true); then
    compat_pass "error message text and SQLSTATE"
else
    compat_fail "error message text and SQLSTATE"
fi
# A script stops at its first error (line number reported); --force goes on.
err_script="SELECT 'before';
SELECT * FROM demo.no_such_table;
SELECT 'after';"
rc=0
out=$(tq <<<"$err_script" 2>"$work/stderr") || rc=$?
if ((rc == 1)) && [[ $out == before ]] && grep -q "ERROR 1146 (42S02) at line 2" "$work/stderr"; then
    compat_pass "script stops at the failing line"
else
    compat_fail "script stops at the failing line" "rc=$rc out=$out err=$(cat "$work/stderr")"
fi
# (the 10.11 client then exits 0 in batch mode, as it does against MariaDB directly)
rc=0
out=$(tq --force <<<"$err_script" 2>"$work/stderr") || rc=$?
if ((rc == 0)) && [[ $out == "$(printf 'before\nafter')" ]] && grep -q "ERROR 1146" "$work/stderr"; then
    compat_pass "--force continues after an error"
else
    compat_fail "--force continues after an error" "rc=$rc out=$out"
fi

# --- session behaviour: status, warnings, SET NAMES, identity, KILL ----------------------------
if grep -qE "^Current user:[[:space:]]+$TESSERA_USER@127\.0\.0\.1\$" <(tq -e status 2>&1 || true); then
    compat_pass "status shows Current user: $TESSERA_USER@127.0.0.1"
else
    compat_fail "status shows Current user: $TESSERA_USER@127.0.0.1" \
        "got: $(tq -e status 2>&1 | grep -i 'current user' || true)"
fi

# expect_session NAME WANT_STDOUT WANT_STDERR_REGEX SCRIPT: SCRIPT runs in ONE client session
# (--force: it goes on after an error); stdout must be WANT_STDOUT, stderr must match the regex
# (empty regex: stderr must be empty).
expect_session() {
    local name=$1 want=$2 errre=$3 got
    got=$(tq --force <<<"$4" 2>"$work/stderr") || true
    if [[ $got != "$want" ]]; then
        compat_fail "$name" "output differs"
        diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -20 | sed 's/^/         /' || true
    elif [[ -z $errre && -s $work/stderr ]] || [[ -n $errre ]] && ! grep -qE -- "$errre" "$work/stderr"; then
        compat_fail "$name" "stderr: $(head -c 300 "$work/stderr")"
    else
        compat_pass "$name"
    fi
}

cast_warning="Warning	1292	Truncated incorrect INTEGER value: 'abc'"
# The sequence of the bug report: the CLI's USE sends COM_INIT_DB, which fails.
expect_session "USE no_such_db fails, then SHOW WARNINGS after SELECT CAST lists only the 1292" \
    "$(printf '0\n%s' "$cast_warning")" "ERROR 1049 .*Unknown database 'no_such_db'" \
    "USE no_such_db;
SELECT CAST('abc' AS SIGNED);
SHOW WARNINGS;"
expect_session "SHOW WARNINGS after a failed statement lists that error" \
    "Error	1146	Table 'demo.no_such_table' doesn't exist" "ERROR 1146 " \
    "SELECT * FROM demo.no_such_table;
SHOW WARNINGS;"
expect_session "SHOW WARNINGS after SELECT CAST; @@warning_count = 1" \
    "$(printf '0\n%s\n0\n1' "$cast_warning")" "" \
    "SELECT CAST('abc' AS SIGNED);
SHOW WARNINGS;
SELECT CAST('abc' AS SIGNED);
SELECT @@warning_count;"

# Ten statements without output (a write, a committed transaction, reads) between SET and check.
churn="CREATE TABLE IF NOT EXISTS demo.cli_churn (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20));
INSERT INTO demo.cli_churn (v) VALUES ('one');
BEGIN;
UPDATE demo.cli_churn SET v = 'updated' WHERE id = LAST_INSERT_ID();
INSERT INTO demo.cli_churn (v) VALUES ('in transaction');
COMMIT;
SELECT COUNT(*) INTO @n FROM demo.cli_churn;
SELECT name INTO @name FROM demo.customers WHERE id = 2;
SELECT SUM(amount) INTO @sum FROM demo.orders;
DO 1;"
expect_session "SET NAMES utf8mb4 COLLATE utf8mb4_bin kept across statements, then SET NAMES utf8mb4" \
    "$(printf 'utf8mb4_bin\t0\nutf8mb4_general_ci\t1')" "" \
    "SET NAMES utf8mb4 COLLATE utf8mb4_bin;
$churn
SELECT @@collation_connection, 'a' = 'A';
SET NAMES utf8mb4;
$churn
SELECT @@collation_connection, 'a' = 'A';"

login="$TESSERA_USER@127.0.0.1"
expect_output "USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER(), CURRENT_USER" \
    "$login	$login	$login	$TESSERA_USER@%	$TESSERA_USER@%" \
    tq -e "SELECT USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER(), CURRENT_USER"
ids=$(tq <<<"$(for _ in 1 2 3 4 5; do printf 'SELECT CONNECTION_ID();\n%s\n' "$churn"; done)" 2>&1 | sort -u)
if [[ $ids =~ ^[0-9]+$ ]]; then
    compat_pass "CONNECTION_ID() the same on every statement of a session"
else
    compat_fail "CONNECTION_ID() the same on every statement of a session" "got: $(tr '\n' ' ' <<<"$ids")"
fi

kill_checks

# --- LOAD DATA LOCAL INFILE -------------------------------------------------------------------
cat >"$work/load.csv" <<'CSV'
1,"plain",1.5
2,"with, comma",-2
3,"quote ""inside""",0
4,"unicode héllo 🚀",\N
5,"",42.25
CSV
load_sql="DROP TABLE IF EXISTS compat_cli.loaded;
CREATE TABLE compat_cli.loaded (id INT PRIMARY KEY, s VARCHAR(40), d DECIMAL(6,2)) DEFAULT CHARSET=utf8mb4;
LOAD DATA LOCAL INFILE '$work/load.csv' INTO TABLE compat_cli.loaded CHARACTER SET utf8mb4
  FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\n';
SELECT ROW_COUNT();
SELECT COUNT(*) FROM compat_cli.loaded;
SELECT id, s, d FROM compat_cli.loaded ORDER BY id;"
expect_output "LOAD DATA LOCAL INFILE (--local-infile=1)" \
    "$(printf '5\n5\n1\tplain\t1.50\n2\twith, comma\t-2.00\n3\tquote "inside"\t0.00\n4\tunicode héllo 🚀\tNULL\n5\t\t42.25')" \
    tq --local-infile=1 <<<"$load_sql"
# Without CLIENT_LOCAL_FILES MariaDB 10.11 refuses with 4166 (HY000).
expect_error "LOAD DATA LOCAL refused with --local-infile=0 (ERROR 4166)" 4166 \
    tq --local-infile=0 -e "LOAD DATA LOCAL INFILE '$work/load.csv' INTO TABLE compat_cli.loaded"
# The session is still usable after a LOAD DATA LOCAL in the same connection.
expect_output "statements after LOAD DATA LOCAL in one session" "$(printf '5\n6')" \
    tq --local-infile=1 <<SQL
DELETE FROM compat_cli.loaded;
LOAD DATA LOCAL INFILE '$work/load.csv' INTO TABLE compat_cli.loaded FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"';
SELECT COUNT(*) FROM compat_cli.loaded;
INSERT INTO compat_cli.loaded VALUES (6, 'six', 6);
SELECT COUNT(*) FROM compat_cli.loaded;
SQL

# --- from here on: the private environment ------------------------------------------------------
await_tessera cli
echo "cli suite: private environment -> 127.0.0.1:$TESSERA_PORT (--pool-max 1)"
tq -e "CREATE DATABASE IF NOT EXISTS compat_cli"

# --- one client's session state never reaches the next client --------------------------------
# The first client exits inside a transaction, so Tessera must clean up (reset) its backend
# connection; the connection is then reused by the next clients.
default_state=$(dq -e "SELECT @@sql_mode, @@lc_time_names, @@time_zone")
tq -e "BEGIN; SELECT 1" >/dev/null 2>&1 || true
tq -e "SET sql_mode = 'ANSI_QUOTES', lc_time_names = 'de_DE', time_zone = '+03:00'" >/dev/null 2>&1 || true
expect_output "no SET leaks to the next client (after a reset connection)" "$default_state" \
    tq -e "SELECT @@sql_mode, @@lc_time_names, @@time_zone"
tq -e "SET @leak = 'x', sql_mode = 'ANSI'" >/dev/null 2>&1 || true
expect_output "no SET or user variable leaks to the next client" "$(printf 'NULL\t%s' "$(cut -f1 <<<"$default_state")")" \
    tq -e "SELECT @leak, @@sql_mode"

# --- mariadb-dump through Tessera ---------------------------------------------------------------
tq <<'SQL'
DROP DATABASE IF EXISTS compat_cli_dump;
CREATE DATABASE compat_cli_dump CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
USE compat_cli_dump;
CREATE TABLE parent (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40) NOT NULL, UNIQUE KEY (name));
CREATE TABLE child (
  id BIGINT UNSIGNED PRIMARY KEY AUTO_INCREMENT,
  parent_id INT NOT NULL,
  amount DECIMAL(65,30),
  f DOUBLE,
  b LONGBLOB,
  ts DATETIME(6),
  tm TIME(6),
  j JSON,
  e ENUM('x','y'),
  st SET('p','q','r'),
  bits BIT(10),
  note TEXT,
  KEY (parent_id),
  CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES parent (id)
);
INSERT INTO parent (name) VALUES ('alpha'), ('bëta'), ('gamma 🚀');
INSERT INTO child (parent_id, amount, f, b, ts, tm, j, e, st, bits, note) VALUES
  (1, 12345678901234567890123456789012345.123456789012345678901234567890, 1.5e300,
   X'00FF00FF7F80', '2024-02-29 23:59:59.999999', '-838:59:59.000000', '{"k": [1, "v"]}', 'x', 'p,r', b'1010101010', 'line1\nline2\ttab ''quote'' \\ backslash'),
  (2, -0.000000000000000000000000000001, -2.5, REPEAT(X'00FF', 50000), NULL, '00:00:00.000001', NULL, 'y', '', b'0', NULL),
  (3, NULL, NULL, NULL, '1000-01-01 00:00:00.000000', NULL, '[]', NULL, NULL, NULL, 'héllo wörld 🚀');
CREATE VIEW v_totals AS SELECT p.name, COUNT(c.id) AS n FROM parent p LEFT JOIN child c ON c.parent_id = p.id GROUP BY p.name;
CREATE TRIGGER child_note BEFORE INSERT ON child FOR EACH ROW SET NEW.note = IFNULL(NEW.note, 'via trigger');
SQL

dump_opts=(--skip-comments --skip-dump-date --routines --triggers --events --hex-blob)
dump_via_tessera() {
    mariadb-dump --protocol=TCP -h"$TESSERA_HOST" -P"$TESSERA_PORT" -u"$TESSERA_USER" \
        -p"$TESSERA_PASSWORD" "${dump_opts[@]}" "$@"
}
dump_direct() {
    mariadb-dump --protocol=TCP -h"${MARIADB_HOST:-127.0.0.1}" -P"$MARIADB_PORT" \
        -u"${MARIADB_USER:-tessera}" -p"${MARIADB_PASSWORD:-tessera}" "${dump_opts[@]}" "$@"
}
# Definers name the user that created the objects: through Tessera that is the backend user.
for variant in lock single-transaction; do
    extra=()
    [[ $variant == single-transaction ]] && extra=(--single-transaction)
    rc=0
    dump_via_tessera "${extra[@]}" compat_cli_dump >"$work/dump-tessera-$variant.sql" 2>"$work/stderr" || rc=$?
    if ((rc != 0)); then
        compat_fail "mariadb-dump ($variant) through Tessera" "exit $rc: $(head -c 400 "$work/stderr")"
        continue
    fi
    compat_pass "mariadb-dump ($variant) through Tessera"
    dump_direct "${extra[@]}" compat_cli_dump >"$work/dump-direct-$variant.sql" 2>"$work/stderr" || true
    if cmp -s "$work/dump-tessera-$variant.sql" "$work/dump-direct-$variant.sql"; then
        compat_pass "dump ($variant) identical to a direct dump"
    else
        compat_fail "dump ($variant) identical to a direct dump"
        diff "$work/dump-direct-$variant.sql" "$work/dump-tessera-$variant.sql" | head -20 | cut -c1-200 | sed 's/^/         /' || true
    fi
done

# Reload the dump through Tessera into a new database; compare checksums and rows.
rc=0
{
    echo "DROP DATABASE IF EXISTS compat_cli_reload; CREATE DATABASE compat_cli_reload CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci; USE compat_cli_reload;"
    cat "$work/dump-tessera-lock.sql"
} | tq >"$work/reload.out" 2>"$work/stderr" || rc=$?
if ((rc != 0)); then
    compat_fail "dump reloads through Tessera" "exit $rc: $(head -c 400 "$work/stderr")"
else
    compat_pass "dump reloads through Tessera"
    rows_sql() {
        echo "SELECT id, name FROM $1.parent ORDER BY id;
SELECT id, parent_id, amount, f, HEX(b), ts, tm, j, e, st, BIN(bits), note FROM $1.child ORDER BY id;
SELECT * FROM $1.v_totals ORDER BY name;
SELECT COUNT(*), SUM(LENGTH(b)), MD5(GROUP_CONCAT(HEX(b) ORDER BY id)) FROM $1.child;
SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '$1';"
    }
    checksum() {
        dq -e "CHECKSUM TABLE $1.parent, $1.child EXTENDED" | cut -f2
    }
    src_rows=$(dq <<<"$(rows_sql compat_cli_dump)" 2>&1 || true)
    new_rows=$(dq <<<"$(rows_sql compat_cli_reload)" 2>&1 || true)
    if [[ -n $src_rows && $src_rows == "$new_rows" ]]; then
        compat_pass "reloaded rows, view and trigger identical"
    else
        compat_fail "reloaded rows, view and trigger identical"
        diff <(printf '%s\n' "$src_rows") <(printf '%s\n' "$new_rows") | head -20 | cut -c1-200 | sed 's/^/         /' || true
    fi
    src_sum=$(checksum compat_cli_dump 2>&1 || true)
    new_sum=$(checksum compat_cli_reload 2>&1 || true)
    if [[ -n $src_sum && $src_sum == "$new_sum" ]]; then
        compat_pass "CHECKSUM TABLE equal after reload ($(tr '\n' ' ' <<<"$src_sum"))"
    else
        compat_fail "CHECKSUM TABLE equal after reload" "source: $src_sum reload: $new_sum"
    fi
    # The reloaded trigger works through Tessera.
    expect_output "reloaded trigger fires" "via trigger" tq compat_cli_reload -e \
        "INSERT INTO child (parent_id) VALUES (1); SELECT note FROM child WHERE id = LAST_INSERT_ID()"
fi

echo
compat_report "cli checks"
