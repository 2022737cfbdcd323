"""Errors pass through Tessera as MariaDB reports them: errno, SQLSTATE and message, for the
text protocol, for COM_STMT_PREPARE and for COM_STMT_EXECUTE; warnings and SHOW WARNINGS /
SHOW ERRORS see the diagnostics of the statement before, even with other clients in between."""

import mysql.connector
import pymysql
import pytest

from conftest import connector_connect, direct, pymysql_connect, query, scalar, tessera

SETUP = [
    "CREATE TABLE IF NOT EXISTS compat_py.errs (id INT PRIMARY KEY, s VARCHAR(5), "
    "u INT UNSIGNED) DEFAULT CHARSET=utf8mb4",
    "INSERT IGNORE INTO compat_py.errs (id, s) VALUES (1, 'one')",
]

# (name, sql, errno, sqlstate, driver exception class of PyMySQL)
CASES = [
    ("duplicate_key", "INSERT INTO compat_py.errs (id, s) VALUES (1, 'dup')", 1062, "23000",
     pymysql.err.IntegrityError),
    ("syntax", "SELEC 1", 1064, "42000", pymysql.err.ProgrammingError),
    ("unknown_table", "SELECT * FROM compat_py.no_such_table", 1146, "42S02",
     pymysql.err.ProgrammingError),
    ("unknown_column", "SELECT no_such_column FROM compat_py.errs", 1054, "42S22",
     pymysql.err.OperationalError),
    ("unknown_database", "SELECT * FROM compat_no_such_db.t", 1146, "42S02",
     pymysql.err.ProgrammingError),
    # (the default sql_mode has STRICT_TRANS_TABLES)
    ("data_too_long", "INSERT INTO compat_py.errs (id, s) VALUES (2, 'abcdefgh')", 1406, "22001",
     pymysql.err.DataError),
    ("signal", "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom boom', MYSQL_ERRNO = 1644",
     1644, "45000", pymysql.err.OperationalError),
    ("unknown_variable", "SET @@session.compat_no_such_variable = 1", 1193, "HY000",
     pymysql.err.OperationalError),
]
IDS = [c[0] for c in CASES]


@pytest.fixture(scope="module", autouse=True)
def errs_table(compat_db):
    conn = pymysql_connect(tessera())
    try:
        for sql in SETUP:
            query(conn, sql)
    finally:
        conn.close()


def connector_error(target, sql, prepared, params=None):
    conn = connector_connect(target)
    try:
        cur = conn.cursor(prepared=prepared)
        with pytest.raises(mysql.connector.Error) as info:
            cur.execute(sql, params)
            cur.fetchall()
        err = info.value
        # The session goes on after the error.
        cur2 = conn.cursor()
        cur2.execute("SELECT 42")
        assert cur2.fetchall() == [(42,)]
        return err.errno, err.sqlstate, err.msg
    finally:
        conn.close()


def pymysql_error(target, sql):
    conn = pymysql_connect(target)
    try:
        with pytest.raises(pymysql.err.MySQLError) as info:
            query(conn, sql)
        assert scalar(conn, "SELECT 42") == 42
        return type(info.value), info.value.args
    finally:
        conn.close()


@pytest.mark.parametrize("name,sql,errno,sqlstate,exc", CASES, ids=IDS)
def test_text_protocol_error(name, sql, errno, sqlstate, exc):
    got = connector_error(tessera(), sql, prepared=False)
    assert got[:2] == (errno, sqlstate), got
    assert got == connector_error(direct(), sql, prepared=False)


@pytest.mark.parametrize("name,sql,errno,sqlstate,exc", CASES, ids=IDS)
def test_pymysql_error(name, sql, errno, sqlstate, exc):
    cls, args = pymysql_error(tessera(), sql)
    assert cls is exc, (cls, args)
    assert args[0] == errno, args
    assert (cls, args) == pymysql_error(direct(), sql)


PREPARE_ERRORS = [
    ("syntax", "SELEC ?", 1064, "42000"),
    ("syntax_late", "SELECT ? FROM compat_py.errs WHERE", 1064, "42000"),
    ("unknown_table", "SELECT ? FROM compat_py.no_such_table", 1146, "42S02"),
    ("unknown_column", "SELECT no_such_column, ? FROM compat_py.errs", 1054, "42S22"),
]


@pytest.mark.parametrize("name,sql,errno,sqlstate", PREPARE_ERRORS, ids=[p[0] for p in PREPARE_ERRORS])
def test_prepare_error(name, sql, errno, sqlstate):
    """COM_STMT_PREPARE fails: the error is the backend's, unchanged."""
    got = connector_error(tessera(), sql, prepared=True, params=(1,))
    assert got[:2] == (errno, sqlstate), got
    assert got == connector_error(direct(), sql, prepared=True, params=(1,))


def test_execute_error_duplicate_key():
    """COM_STMT_EXECUTE fails (the prepare worked): 1062 / 23000 and the backend's message."""
    sql = "INSERT INTO compat_py.errs (id, s) VALUES (?, ?)"
    got = connector_error(tessera(), sql, prepared=True, params=(1, "dup"))
    assert got[:2] == (1062, "23000"), got
    assert got == connector_error(direct(), sql, prepared=True, params=(1, "dup"))


@pytest.mark.parametrize("env", ["pool2", "main"])
def test_error_then_show_warnings_sees_it(env):
    """SHOW WARNINGS / SHOW ERRORS / @@error_count report the failed statement before them."""
    target = tessera(env)
    conn = pymysql_connect(target)
    noise = [pymysql_connect(target) for _ in range(4)]
    try:
        with pytest.raises(pymysql.err.ProgrammingError):
            query(conn, "SELECT * FROM compat_py.no_such_table")
        for n in noise:  # other clients run statements in between
            assert scalar(n, "SELECT 1") == 1
        rows = query(conn, "SHOW WARNINGS")
        assert [(r[0], r[1]) for r in rows] == [("Error", 1146)], rows
        assert "no_such_table" in rows[0][2]
    finally:
        conn.close()
        for n in noise:
            n.close()


def test_warnings_count_and_show_warnings():
    """A statement with warnings: the OK packet's warning count and SHOW WARNINGS agree."""
    results = []
    for target in (tessera("pool2"), direct("pool2")):
        conn = pymysql_connect(target)
        noise = pymysql_connect(target)
        try:
            query(conn, "CREATE DATABASE IF NOT EXISTS compat_py")
            query(conn, "CREATE TABLE IF NOT EXISTS compat_py.warn (s VARCHAR(3), i TINYINT)")
            query(conn, "SET sql_mode = ''")
            cur = conn.cursor()
            cur.execute("INSERT INTO compat_py.warn VALUES ('abcdef', 1000), ('x', -1000)")
            warning_count = cur.warning_count  # from the OK packet
            cur.close()
            assert scalar(noise, "SELECT 2") == 2
            rows = query(conn, "SHOW WARNINGS")
            count = scalar(conn, "SELECT @@warning_count")
            results.append((warning_count, [tuple(r) for r in rows], count))
        finally:
            conn.close()
            noise.close()
    tess, mariadb = results
    assert mariadb[0] == 3 and {r[1] for r in mariadb[1]} == {1265, 1264}, mariadb
    assert tess == mariadb
