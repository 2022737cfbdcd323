"""LAST_INSERT_ID(), ROW_COUNT(), FOUND_ROWS() and the OK packet's insert id / affected rows
through Tessera are exactly what one MariaDB connection gives, with other clients running
statements in between (environment pool2: --pool-max 2, so sessions share backend connections).

The same scripted sequence runs once directly on MariaDB and once through Tessera, each in its
own fresh database, with the same deterministic "noise" from other sessions between the steps;
the two lists of observations must be equal. A threaded variant checks the invariants
(each session sees its own values) under real concurrency.
"""

import threading

import pymysql
import pytest

from conftest import connector_connect, direct, pymysql_connect, query, tessera

ENV = "pool2"


class Noise:
    """Other sessions (same kind of target), each running a small fixed set of statements that
    changes its own LAST_INSERT_ID / ROW_COUNT / FOUND_ROWS and the shared AUTO_INCREMENT."""

    def __init__(self, target, db, n=4):
        self.conns = [pymysql_connect(target, database=db) for _ in range(n)]
        self.i = 0

    def __call__(self):
        for c in self.conns:
            self.i += 1
            query(c, "INSERT INTO t (v) VALUES (%s)", (f"noise{self.i}",))
            query(c, "SELECT LAST_INSERT_ID(%s)", (7000 + self.i,))
            query(c, "UPDATE t SET v = v WHERE id < 0")
            query(c, "SELECT SQL_CALC_FOUND_ROWS id FROM t LIMIT 1")
            query(c, "SELECT FOUND_ROWS()")
            query(c, "SELECT ROW_COUNT()")

    def close(self):
        for c in self.conns:
            c.close()


STEPS = [
    "INSERT INTO t (v) VALUES ('a')",
    "SELECT LAST_INSERT_ID()",
    "@noise",
    "SELECT LAST_INSERT_ID(), @@identity, @@last_insert_id",
    "INSERT INTO t (v) VALUES ('b'), ('c'), ('d')",
    "@noise",
    "SELECT LAST_INSERT_ID(), ROW_COUNT()",
    "SELECT ROW_COUNT()",
    "UPDATE t SET v = CONCAT(v, '!') WHERE id <= 6",
    "@noise",
    "SELECT ROW_COUNT()",
    "UPDATE t SET v = v WHERE id = 1",
    "SELECT ROW_COUNT()",
    "DELETE FROM t WHERE v = 'nothing'",
    "@noise",
    "SELECT ROW_COUNT()",
    "SELECT SQL_CALC_FOUND_ROWS id FROM t ORDER BY id LIMIT 2",
    "@noise",
    "SELECT FOUND_ROWS()",
    "SELECT id FROM t WHERE id <= 3 ORDER BY id",
    "SELECT FOUND_ROWS()",
    "INSERT INTO t (id, v) VALUES (1000, 'explicit')",
    "SELECT LAST_INSERT_ID()",
    "SELECT LAST_INSERT_ID(42)",
    "@noise",
    "SELECT LAST_INSERT_ID()",
    "INSERT INTO t (v) VALUES ('after explicit')",
    "@noise",
    "SELECT LAST_INSERT_ID()",
    "INSERT INTO t (id, v) VALUES (1, 'dup') ON DUPLICATE KEY UPDATE v = 'upd'",
    "SELECT ROW_COUNT(), LAST_INSERT_ID()",
    "REPLACE INTO t (id, v) VALUES (2, 'rep')",
    "@noise",
    "SELECT ROW_COUNT()",
    "INSERT IGNORE INTO t (id, v) VALUES (1, 'ign')",
    "SELECT ROW_COUNT()",
    "@error INSERT INTO t (id, v) VALUES (1, 'dup error')",
    "SELECT LAST_INSERT_ID(), ROW_COUNT()",
    "BEGIN",
    "INSERT INTO t (v) VALUES ('in tx')",
    "@noise",
    "SELECT LAST_INSERT_ID(), ROW_COUNT()",
    "COMMIT",
    "UPDATE t SET v = 'many' WHERE id > 0",
    "@noise",
    "SELECT ROW_COUNT()",
    "SELECT COUNT(*) FROM t",
    "SELECT FOUND_ROWS()",
    "DELETE FROM t WHERE v LIKE 'noise%'",
    "@noise",
    "SELECT ROW_COUNT()",
]


def run_sequence(conn_factory, target, db, prepared=False):
    """Runs STEPS on a fresh table; returns the list of observations."""
    setup = pymysql_connect(target)
    query(setup, f"DROP DATABASE IF EXISTS {db}")
    query(setup, f"CREATE DATABASE {db}")
    query(setup, f"CREATE TABLE {db}.t (id BIGINT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(40))")
    setup.close()
    conn = conn_factory(target, db)
    noise = Noise(target, db)
    observations = []
    # One cursor for the whole sequence: Connector/Python pings the server (COM_PING) when it
    # creates a cursor, and COM_PING resets ROW_COUNT() (see test_row_count_after_ping).
    cur = conn.cursor(prepared=True) if prepared else conn.cursor()
    try:
        for step in STEPS:
            if step == "@noise":
                noise()
                continue
            expect_error = step.startswith("@error ")
            sql = step.removeprefix("@error ")
            try:
                cur.execute(sql)
                rows = [tuple(r) for r in cur.fetchall()] if cur.description else None
                observations.append((sql, "ok", rows, cur.lastrowid, cur.rowcount))
            except (pymysql.err.MySQLError, Exception) as e:  # noqa: BLE001
                if not expect_error:
                    raise
                observations.append((sql, "error", getattr(e, "errno", None) or e.args[0]))
        cur.close()
    finally:
        noise.close()
        conn.close()
    return observations


def pymysql_factory(found_rows):
    return lambda target, db: pymysql_connect(target, database=db, found_rows=found_rows)


def connector_factory(target, db):
    return connector_connect(target, database=db)


VARIANTS = {
    "pymysql": (pymysql_factory(False), False),
    "pymysql_client_found_rows": (pymysql_factory(True), False),
    "connector_text": (connector_factory, False),
    "connector_prepared": (connector_factory, True),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_same_answers_as_one_mariadb_connection(compat_db, variant):
    factory, prepared = VARIANTS[variant]
    target = tessera(ENV)  # (skips first in direct mode)
    want = run_sequence(factory, direct(ENV), f"compat_py_ctr_d_{variant}", prepared)
    got = run_sequence(factory, target, f"compat_py_ctr_t_{variant}", prepared)
    # Sanity of the reference itself.
    assert want[0][3] == 1 and want[0][4] == 1, want[0]
    diffs = [f"  {w[0]}\n    mariadb: {w[1:]}\n    tessera: {g[1:]}"
             for w, g in zip(want, got) if w != g]
    assert len(want) == len(got)
    assert not diffs, f"{variant}: {len(diffs)} steps differ:\n" + "\n".join(diffs)


def test_found_rows_flag_changes_affected_rows(compat_db):
    """CLIENT_FOUND_ROWS: an UPDATE that changes nothing reports matched rows, per client, even
    when clients with and without the flag share Tessera's backend connections."""
    target = tessera(ENV)
    db = "compat_py_ctr_flag"
    setup = pymysql_connect(target)
    query(setup, f"CREATE DATABASE IF NOT EXISTS {db}")
    query(setup, f"CREATE TABLE IF NOT EXISTS {db}.t (id INT PRIMARY KEY, v INT)")
    query(setup, f"REPLACE INTO {db}.t VALUES (1, 1), (2, 1)")
    setup.close()
    with_flag = pymysql_connect(target, database=db, found_rows=True)
    without = pymysql_connect(target, database=db)
    try:
        for _ in range(5):
            for conn, want in ((with_flag, 2), (without, 0)):
                cur = conn.cursor()
                cur.execute("UPDATE t SET v = 1")
                assert cur.rowcount == want, f"found_rows={want == 2}: rowcount {cur.rowcount}"
                cur.execute("SELECT ROW_COUNT()")
                assert cur.fetchone()[0] == want
                cur.close()
    finally:
        with_flag.close()
        without.close()


def test_invariants_under_concurrency(compat_db):
    """12 threads through Tessera (--pool-max 2): every session sees its own counters."""
    target = tessera(ENV)
    db = "compat_py_ctr_conc"
    setup = pymysql_connect(target)
    query(setup, f"DROP DATABASE IF EXISTS {db}")
    query(setup, f"CREATE DATABASE {db}")
    query(setup, f"CREATE TABLE {db}.t (id BIGINT PRIMARY KEY AUTO_INCREMENT, owner INT, v INT)")
    setup.close()
    errors = []
    start = threading.Barrier(12)

    def worker(owner):
        try:
            conn = pymysql_connect(target, database=db)
            cur = conn.cursor()
            start.wait(30)
            mine = 0
            for i in range(25):
                n = 1 + (i + owner) % 3
                cur.execute("INSERT INTO t (owner, v) VALUES " + ", ".join(["(%s, %s)"] * n),
                            [x for _ in range(n) for x in (owner, i)])
                first, count = cur.lastrowid, cur.rowcount
                mine += n
                assert count == n, (owner, i, count)
                cur.execute("SELECT LAST_INSERT_ID(), ROW_COUNT()")
                assert cur.fetchone() == (first, n), (owner, i, first)
                cur.execute("SELECT owner FROM t WHERE id = %s", (first,))
                assert cur.fetchone() == (owner,)
                cur.execute("UPDATE t SET v = v + 1 WHERE owner = %s", (owner,))
                assert cur.rowcount == mine
                cur.execute("SELECT ROW_COUNT()")
                assert cur.fetchone() == (mine,), (owner, i)
                cur.execute("SELECT SQL_CALC_FOUND_ROWS id FROM t WHERE owner = %s LIMIT 1",
                            (owner,))
                cur.fetchall()
                cur.execute("SELECT FOUND_ROWS()")
                assert cur.fetchone() == (mine,), (owner, i)
                cur.execute("SELECT LAST_INSERT_ID()")
                assert cur.fetchone() == (first,), (owner, i)
            cur.close()
            conn.close()
        except Exception as e:  # noqa: BLE001
            errors.append(f"owner {owner}: {e!r}")

    threads = [threading.Thread(target=worker, args=(o,)) for o in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, "\n".join(errors)


def test_row_count_after_ping(compat_db):
    """MariaDB resets ROW_COUNT() to 0 on COM_PING (Connector/Python pings whenever it makes a
    cursor, so its users see this)."""
    results = []
    for target in (direct(ENV), tessera(ENV)):
        conn = pymysql_connect(target)
        try:
            query(conn, "CREATE DATABASE IF NOT EXISTS compat_py")
            query(conn, "CREATE TABLE IF NOT EXISTS compat_py.ping (i INT)")
            query(conn, "INSERT INTO compat_py.ping VALUES (1), (2)")
            conn.ping(reconnect=False)
            results.append(query(conn, "SELECT ROW_COUNT()"))
        finally:
            conn.close()
    assert results[0] == [(0,)], results
    assert results[1] == results[0], f"mariadb {results[0]}, tessera {results[1]}"
