"""Driver battery: the same checks for PyMySQL, mysql-connector-python (text protocol and its
prepared cursor) and mysqlclient (MySQLdb on MariaDB Connector/C), as user app on the main
environment (Tessera with read/write split and a replica; MariaDB itself with COMPAT_DIRECT=1):

  1. session state set by SQL survives ~10 other statements (reads, a write, a committed
     transaction): SET NAMES ... COLLATE, SET CHARACTER SET, character_set_results = NULL,
     collation_connection, time_zone, sql_mode, a user variable, a TEMPORARY table, GET_LOCK;
  2. warnings / SHOW WARNINGS / @@warning_count / SHOW COUNT(*) WARNINGS / GET DIAGNOSTICS are
     those of the client's previous statement, also after a failed statement;
  3. USER() / CURRENT_USER() name the client's account, CONNECTION_ID() is stable per connection;
  4. CHANGE USER (Connector/Python cmd_change_user, mysqlclient change_user);
  6. LOAD DATA LOCAL INFILE;
  7. the client can SET session_track_*;
  8. a read on one connection sees a write acknowledged on another (200 rounds; also through
     Connector/Python's connection pool).
The KILL checks (5) are in test_driver_kill.py. Every expected value is MariaDB's own answer
(the same checks pass with COMPAT_DIRECT=1).
"""

import mysql.connector.pooling
import os

import pytest

from conftest import DB, HOST, app, connector_connect

# --- 1. session state ------------------------------------------------------------------------


def churn(d, conn, table):
    """Eleven statements of other kinds between setting state and checking it: reads (a
    read/write split may send them to a replica), an autocommit write and a committed
    transaction."""
    d.run(conn, f"INSERT INTO {table} (note) VALUES ('churn')")
    d.run(conn, f"SELECT COUNT(*) FROM {table}")
    d.run(conn, "SELECT id, name FROM demo.customers ORDER BY id")
    d.run(conn, "BEGIN")
    d.run(conn, f"UPDATE {table} SET amount = amount + 1 WHERE id = LAST_INSERT_ID()")
    d.run(conn, f"SELECT MAX(id) FROM {table}")
    d.run(conn, "COMMIT")
    d.run(conn, "SELECT 1")
    d.run(conn, f"SELECT note FROM {table} ORDER BY id DESC LIMIT 1")
    d.run(conn, "DO 0")
    d.run(conn, "SELECT COUNT(*) FROM demo.orders")


COLLATION = "SELECT @@collation_connection, 'a' = 'A'"
SESSION_TRACK = ("SELECT @@session_track_system_variables, @@session_track_schema, "
                 "@@session_track_state_change")

# name -> steps; a step is (statements, check, expected rows), run in order on one connection.
STATE_CASES = {
    "set_names_collate": [
        (["SET NAMES utf8mb4 COLLATE utf8mb4_bin"], COLLATION, [("utf8mb4_bin", 0)]),
        (["SET NAMES utf8mb4"], COLLATION, [("utf8mb4_general_ci", 1)]),
    ],
    # The connection character set follows the default database's (compat_py: utf8mb4).
    "set_character_set": [
        (["SET CHARACTER SET latin1"],
         "SELECT @@character_set_client, @@character_set_results, "
         "@@character_set_connection = @@character_set_database, @@character_set_connection",
         [("latin1", "latin1", 1, "utf8mb4")]),
    ],
    "results_null_then_collation": [
        (["SET character_set_results = NULL"], "SELECT @@character_set_results", [(None,)]),
        (["SET collation_connection = utf8mb4_unicode_ci"],
         "SELECT @@collation_connection, @@character_set_results",
         [("utf8mb4_unicode_ci", None)]),
    ],
    "time_zone": [
        (["SET time_zone = '+05:30'"],
         "SELECT @@time_zone, TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW())", [("+05:30", 330)]),
    ],
    # With ANSI_QUOTES "name" is a column, without it a string.
    "sql_mode_ansi_quotes": [
        (["SET sql_mode = 'ANSI_QUOTES'"],
         'SELECT @@sql_mode, (SELECT "name" FROM demo.customers WHERE id = 1)',
         [("ANSI_QUOTES", "Ada")]),
    ],
    "user_variable": [(["SET @x = 42"], "SELECT @x", [(42,)])],
    "temporary_table": [
        (["CREATE TEMPORARY TABLE bat_tmp (v INT)", "INSERT INTO bat_tmp VALUES (1), (2)"],
         "SELECT COUNT(*) FROM bat_tmp", [(2,)]),
        (["INSERT INTO bat_tmp VALUES (3)"], "SELECT COUNT(*), SUM(v) FROM bat_tmp", [(3, 6)]),
    ],
    # 7. Session tracking is the client's to set, too.
    "session_track": [
        (["SET session_track_schema = OFF", "SET session_track_state_change = ON",
          "SET session_track_system_variables = 'autocommit'"],
         SESSION_TRACK, [("autocommit", 0, 1)]),
    ],
}


def run_steps(d, conn, table, steps):
    for sqls, check, want in steps:
        for sql in sqls:
            d.run(conn, sql)
        assert d.run(conn, check) == want, f"right after {sqls}"
        churn(d, conn, table)
        assert d.run(conn, check) == want, f"after {sqls} and 11 other statements"


@pytest.mark.parametrize("case", list(STATE_CASES))
def test_session_state_kept(driver, new_conn, table, case):
    run_steps(driver, new_conn(), table, STATE_CASES[case])


def test_get_lock_seen_from_another_connection(driver, new_conn, table):
    d = driver
    a, b = new_conn(), new_conn()
    name = f"compat_bat_{d.name}"
    assert d.run(a, f"SELECT GET_LOCK('{name}', 0)") == [(1,)]
    churn(d, a, table)
    assert d.run(b, f"SELECT IS_USED_LOCK('{name}')") != [(None,)], "the lock is not held any more"
    assert d.run(b, f"SELECT GET_LOCK('{name}', 0)") == [(0,)]
    churn(d, a, table)
    assert d.run(a, f"SELECT RELEASE_LOCK('{name}')") == [(1,)]
    assert d.run(b, f"SELECT IS_USED_LOCK('{name}')") == [(None,)]


@pytest.mark.skipif(
    os.environ.get("COMPAT_DIRECT", "0") != "1",
    reason="known limit through Tessera: IS_USED_LOCK() answers the backend thread id (docs/architecture.md)",
)
def test_is_used_lock_names_the_holder(driver, new_conn):
    """IS_USED_LOCK() answers the holder's CONNECTION_ID() (what a client compares it with)."""
    d = driver
    a, b = new_conn(), new_conn()
    name = f"compat_bat_owner_{d.name}"
    assert d.run(a, f"SELECT GET_LOCK('{name}', 0)") == [(1,)]
    a_id = d.run(a, "SELECT CONNECTION_ID()")[0][0]
    try:
        assert d.run(b, f"SELECT IS_USED_LOCK('{name}')") == [(a_id,)]
    finally:
        d.run(a, f"SELECT RELEASE_LOCK('{name}')")


# --- 2. warnings and the diagnostics area ----------------------------------------------------

CAST = "SELECT CAST('abc' AS SIGNED)"
W1292 = [("Warning", 1292, "Truncated incorrect INTEGER value: 'abc'")]


def test_show_warnings_after_warning(driver, new_conn):
    d = driver
    conn = new_conn()
    assert d.run(conn, CAST) == [(0,)]
    assert d.run(conn, "SHOW WARNINGS") == W1292
    assert d.run(conn, CAST) == [(0,)]
    assert d.run(conn, "SELECT @@warning_count") == [(1,)]
    assert d.run(conn, CAST) == [(0,)]
    assert d.run(conn, "SHOW COUNT(*) WARNINGS") == [(1,)]
    assert d.run(conn, CAST) == [(0,)]
    d.run(conn, "GET DIAGNOSTICS @n = NUMBER")
    assert d.run(conn, "SELECT @n") == [(1,)]


FAILURES = {
    "use_unknown_db": ("USE no_such_db_xyz", 1049),
    "unknown_table": (f"SELECT * FROM {DB}.no_such_table_xyz", 1146),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_show_warnings_after_error(driver, new_conn, failure):
    """SHOW WARNINGS lists the error of the client's own failed statement, even when another
    client failed (differently) in between."""
    d = driver
    sql, errno = FAILURES[failure]
    conn, other = new_conn(), new_conn()
    with pytest.raises(d.Error) as info:
        d.run(conn, sql)
    assert d.errno(info.value) == errno
    with pytest.raises(d.Error):
        d.run(other, f"SELECT * FROM {DB}.other_missing_table")
    assert d.run(conn, "SHOW WARNINGS") == [("Error", errno, d.errmsg(info.value))]


def test_failed_use_then_warning(driver, new_conn):
    d = driver
    conn = new_conn()
    with pytest.raises(d.Error):
        d.run(conn, "USE no_such_db_xyz")
    assert d.run(conn, CAST) == [(0,)]
    assert d.run(conn, "SHOW WARNINGS") == W1292


def test_no_warnings(driver, new_conn):
    """A fresh connection has none; a statement that uses a table clears them. (MariaDB keeps
    the previous diagnostics over a statement that uses no table, such as SELECT 1.)"""
    d = driver
    conn = new_conn()
    assert d.run(conn, "SELECT 1") == [(1,)]
    assert d.run(conn, "SHOW WARNINGS") == []
    assert d.run(conn, "SELECT @@warning_count") == [(0,)]
    assert d.run(conn, CAST) == [(0,)]
    assert d.run(conn, "SELECT 1") == [(1,)]
    assert d.run(conn, "SHOW WARNINGS") == W1292, "SELECT 1 clears no diagnostics on MariaDB"
    assert d.run(conn, "SELECT id FROM demo.customers WHERE id = 1") == [(1,)]
    assert d.run(conn, "SHOW WARNINGS") == []
    assert d.run(conn, "SELECT @@warning_count") == [(0,)]


# --- 3. identity -----------------------------------------------------------------------------


def test_user_functions(driver, new_conn):
    d = driver
    user = app().user
    conn = new_conn()
    assert d.run(conn, "SELECT USER(), SESSION_USER(), SYSTEM_USER()") == [(f"{user}@{HOST}",) * 3]
    assert d.run(conn, "SELECT CURRENT_USER(), CURRENT_USER") == [(f"{user}@%",) * 2]


def test_connection_id_stable(driver, new_conn, table):
    d = driver
    a, b = new_conn(), new_conn()
    ids = set()
    for i in range(10):
        ids.add(d.run(a, "SELECT CONNECTION_ID()")[0][0])
        if i == 3:
            churn(d, a, table)
    assert len(ids) == 1, f"CONNECTION_ID() changed within one connection: {sorted(ids)}"
    assert d.run(b, "SELECT CONNECTION_ID()")[0][0] not in ids


# --- 4. CHANGE USER --------------------------------------------------------------------------


def test_change_user(driver, new_conn, table):
    d = driver
    if d.change_user is None:
        pytest.skip(f"{d.name} has no COM_CHANGE_USER API")
    conn = new_conn()
    d.run(conn, "SET @v = 'before'")
    churn(d, conn, table)
    second = app(second=True)
    d.change_user(conn, second.user, second.password)
    assert d.run(conn, "SELECT CURRENT_USER()") == [(f"{second.user}@%",)]
    assert d.run(conn, "SELECT USER()")[0][0].startswith(f"{second.user}@")
    assert d.run(conn, "SELECT @v") == [(None,)], "user variables survived CHANGE USER"


# --- 6. LOAD DATA LOCAL INFILE ---------------------------------------------------------------

CSV_ROWS = [(1, "alpha", 10), (2, "beta", 20), (3, "gamma", 30)]


def test_load_data_local_infile(driver, new_conn, tmp_path, compat_db):
    d = driver
    if not d.local_infile:
        pytest.skip(f"{d.name} cannot send a LOCAL INFILE")
    path = tmp_path / "rows.csv"
    path.write_text("".join(f"{i},{s},{n}\n" for i, s, n in CSV_ROWS))
    tbl = f"{DB}.bat_load_{d.name}"
    conn = new_conn()
    d.run(conn, f"DROP TABLE IF EXISTS {tbl}")
    d.run(conn, f"CREATE TABLE {tbl} (id INT PRIMARY KEY, name VARCHAR(20), amount INT)")
    loaded = d.affected(conn, f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {tbl} "
                              "FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\n' (id, name, amount)")
    assert loaded == 3
    assert d.run(conn, f"SELECT id, name, amount FROM {tbl} ORDER BY id") == CSV_ROWS


# --- 7. session tracking (the settings, once more after each SET) ----------------------------


def test_session_track_settable(driver, new_conn):
    d = driver
    conn = new_conn()
    for sql in ("SET session_track_schema = OFF", "SET session_track_state_change = ON",
                "SET session_track_system_variables = 'autocommit'"):
        d.run(conn, sql)
    assert d.run(conn, SESSION_TRACK) == [("autocommit", 0, 1)]


# --- 8. read your writes across connections --------------------------------------------------

ROUNDS = 200


def count_misses(write, read, table, tag):
    """ROUNDS times: write(sql) inserts a row, read(sql) must see it at once."""
    misses = []
    for i in range(ROUNDS):
        note = f"{tag}-{i}"
        write(f"INSERT INTO {table} (note) VALUES ('{note}')")
        if read(f"SELECT COUNT(*) FROM {table} WHERE note = '{note}'") != [(1,)]:
            misses.append(i)
    return misses


def test_read_after_write_other_connection(driver, new_conn, table):
    d = driver
    a, b = new_conn(), new_conn()
    misses = count_misses(lambda sql: d.run(a, sql), lambda sql: d.run(b, sql), table, "rw")
    assert not misses, f"{len(misses)}/{ROUNDS} reads missed the other connection's write"


def test_read_after_write_connector_pool(compat_db):
    """Two connections taken from Connector/Python's pool: write on one, read on the other."""
    table = f"{DB}.bat_pool"
    target = app()
    setup = connector_connect(target)
    try:
        cur = setup.cursor()
        cur.execute(f"CREATE TABLE IF NOT EXISTS {table} (id INT AUTO_INCREMENT PRIMARY KEY, "
                    "note VARCHAR(40) NOT NULL, KEY (note))")
        cur.execute(f"DELETE FROM {table}")
    finally:
        setup.close()
    pool = mysql.connector.pooling.MySQLConnectionPool(
        pool_name="compat_bat", pool_size=2, host=HOST, port=target.port, user=target.user,
        password=target.password, database=DB, charset="utf8mb4", collation="utf8mb4_general_ci",
        autocommit=True, use_pure=True, ssl_disabled=True, connection_timeout=30)

    def through_pool(sql, role):
        # Both pooled connections are taken for each statement (the pool is a FIFO queue): the
        # write runs on the first, the read on the second, each returned to the pool after.
        a, b = pool.get_connection(), pool.get_connection()
        try:
            cur = (a if role == "write" else b).cursor()
            cur.execute(sql)
            return [tuple(r) for r in cur.fetchall()] if cur.description else []
        finally:
            a.close()
            b.close()

    misses = count_misses(lambda sql: through_pool(sql, "write"),
                          lambda sql: through_pool(sql, "read"), table, "pool")
    assert not misses, f"{len(misses)}/{ROUNDS} reads through the pool missed a write"
