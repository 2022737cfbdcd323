"""Multi-statement queries and multi-result CALLs, read fully with both drivers, through Tessera;
every result list is compared with the same thing run directly on MariaDB."""

import pymysql
import pytest

from conftest import connector_connect, direct, pymysql_connect, query, scalar, tessera

PROCS = [
    "DROP PROCEDURE IF EXISTS compat_py.two_results",
    """CREATE PROCEDURE compat_py.two_results(IN n INT)
       BEGIN
         SELECT n AS a, 'x' AS b, _utf8mb4 'héllo 🚀' AS c;
         SELECT id, name FROM demo.customers ORDER BY id;
       END""",
    "DROP PROCEDURE IF EXISTS compat_py.out_param",
    """CREATE PROCEDURE compat_py.out_param(IN x INT, OUT y INT)
       BEGIN
         SET y = x * 2;
         SELECT x AS input;
       END""",
    "DROP PROCEDURE IF EXISTS compat_py.no_result",
    """CREATE PROCEDURE compat_py.no_result()
       BEGIN
         DO 1;
       END""",
]
CUSTOMERS = [(1, "Ada"), (2, "Grace"), (3, "Linus")]


@pytest.fixture(scope="module", autouse=True)
def procs(compat_db):
    """Created directly on MariaDB, so that the result tests do not depend on CREATE PROCEDURE
    working through Tessera (test_create_procedure_through_tessera checks that)."""
    for target in (direct(), direct("pool2")):
        conn = pymysql_connect(target)
        try:
            query(conn, "CREATE DATABASE IF NOT EXISTS compat_py")
            for sql in PROCS:
                query(conn, sql)
        finally:
            conn.close()


def test_create_procedure_through_tessera():
    """A routine body holds semicolons, yet CREATE PROCEDURE is one statement: it needs no
    CLIENT_MULTI_STATEMENTS (PyMySQL does not ask for it)."""
    conn = pymysql_connect(tessera())
    try:
        query(conn, "DROP PROCEDURE IF EXISTS compat_py.via_tessera")
        query(conn, """CREATE PROCEDURE compat_py.via_tessera()
                       BEGIN
                         SELECT 1 AS a;
                         SELECT 2 AS b;
                       END""")
        query(conn, "DROP FUNCTION IF EXISTS compat_py.f_via_tessera")
        query(conn, """CREATE FUNCTION compat_py.f_via_tessera(x INT) RETURNS INT DETERMINISTIC
                       BEGIN
                         DECLARE y INT;
                         SET y = x + 1;
                         RETURN y * 2;
                       END""")
        assert pymysql_all_results(conn, "CALL compat_py.via_tessera()") == [
            ("rows", ["a"], [(1,)]), ("rows", ["b"], [(2,)]), ("ok", 0)]
        assert scalar(conn, "SELECT compat_py.f_via_tessera(20)") == 42
        # An anonymous compound statement is one statement too.
        assert pymysql_all_results(conn, "BEGIN NOT ATOMIC DECLARE v INT DEFAULT 5; "
                                         "SELECT v * 3 AS r; END") == [
            ("rows", ["r"], [(15,)]), ("ok", 0)]
    finally:
        conn.close()


def pymysql_all_results(conn, sql):
    """Every result of one COM_QUERY: ('rows', [...]) or ('ok', affected rows)."""
    out = []
    cur = conn.cursor()
    cur.execute(sql)
    while True:
        if cur.description:
            out.append(("rows", [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]))
        else:
            out.append(("ok", cur.rowcount))
        if not cur.nextset():
            break
    cur.close()
    return out


def connector_all_results(conn, sql, prepared=False, params=None):
    out = []
    cur = conn.cursor(prepared=prepared)
    cur.execute(sql, params)
    while True:
        if cur.description:
            out.append(("rows", [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]))
        else:
            out.append(("ok", cur.rowcount))
        if not cur.nextset():
            break
    cur.close()
    return out


def both(fn):
    """Runs fn(target) through Tessera and directly on the same MariaDB; returns both."""
    return fn(tessera()), fn(direct())


def call_both(connect, read_results, *args):
    """Runs a CALL returning several results through Tessera and directly; checks the
    connection is still in sync afterwards; returns (through Tessera, direct)."""
    def run(target):
        conn = connect(target)
        try:
            res = read_results(conn, *args)
            assert scalar(conn, "SELECT 'still in sync'") == "still in sync"
            return res
        finally:
            conn.close()

    return both(run)


def two_results(n):
    return [("rows", ["a", "b", "c"], [(n, "x", "héllo 🚀")]), ("rows", ["id", "name"], CUSTOMERS)]


def test_call_two_result_sets_pymysql():
    got, want = call_both(pymysql_connect, pymysql_all_results, "CALL compat_py.two_results(5)")
    assert got == two_results(5) + [("ok", 0)], got
    assert got == want


def test_call_two_result_sets_connector():
    got, want = call_both(connector_connect, connector_all_results, "CALL compat_py.two_results(5)")
    assert [r[:3] for r in got[:2]] == two_results(5), got
    assert got == want


def test_callproc_stored_results_connector():
    def run(target):
        conn = connector_connect(target)
        try:
            cur = conn.cursor()
            cur.callproc("compat_py.two_results", (7,))
            res = [[tuple(r) for r in s.fetchall()] for s in cur.stored_results()]
            cur.close()
            cur = conn.cursor()
            out = cur.callproc("compat_py.out_param", (21, 0))
            res.append(list(out))
            res.append([[tuple(r) for r in s.fetchall()] for s in cur.stored_results()])
            cur.close()
            return res
        finally:
            conn.close()

    got, want = both(run)
    assert got[0] == [(7, "x", "héllo 🚀")]
    assert got[1] == CUSTOMERS
    assert got[2] == [21, 42]
    assert got == want


def prepared_all_results(conn, sql, params):
    """COM_STMT_PREPARE + COM_STMT_EXECUTE, then every result (binary rows / OK) until
    SERVER_MORE_RESULTS_EXISTS is clear. Connector/Python's prepared cursor cannot read more
    than one result of an EXECUTE, so this uses its lower-level calls."""
    from mysql.connector.constants import ServerFlag

    stmt = conn.cmd_stmt_prepare(sql.encode())
    res = conn.cmd_stmt_execute(stmt["statement_id"], data=params, parameters=stmt["parameters"])
    out = []
    while True:
        if isinstance(res, tuple):
            columns = res[1]
            conn.unread_result = True
            rows, eof = conn.get_rows(binary=True, columns=columns)
            out.append(("rows", [c[0] for c in columns], [tuple(r) for r in rows]))
            status = eof["status_flag"]
        else:
            out.append(("ok", res["affected_rows"]))
            status = res["status_flag"]
        if not status & ServerFlag.MORE_RESULTS_EXISTS:
            break
        res = conn._handle_binary_result(conn._socket.recv())
    conn.cmd_stmt_close(stmt["statement_id"])
    return out


def test_call_prepared_two_result_sets():
    """CALL through COM_STMT_PREPARE/EXECUTE: two binary result sets, then the CALL's OK."""
    got, want = call_both(connector_connect, prepared_all_results, "CALL compat_py.two_results(?)", (9,))
    assert got == two_results(9) + [("ok", 0)], got
    assert got == want


def test_out_param_user_variable_follows_session():
    """CALL p(21, @y) sets @y; it must be visible later, also with other clients in between."""
    target = tessera("pool2")  # --pool-max 2
    conn = pymysql_connect(target)
    other = pymysql_connect(target)
    try:
        assert pymysql_all_results(conn, "CALL compat_py.out_param(21, @y)") == [
            ("rows", ["input"], [(21,)]), ("ok", 0)]
        for _ in range(3):
            # The other session holds a backend connection (likely the one the CALL ran on).
            query(other, "BEGIN")
            query(other, "SET @y = -1")
            assert scalar(other, "SELECT @y") == -1
            assert scalar(conn, "SELECT @y") == 42
            query(other, "COMMIT")
            assert scalar(conn, "SELECT @y") == 42
    finally:
        conn.close()
        other.close()


def test_call_without_result_set():
    def run(target):
        conn = pymysql_connect(target)
        try:
            return pymysql_all_results(conn, "CALL compat_py.no_result()")
        finally:
            conn.close()

    got, want = both(run)
    assert got == want == [("ok", 0)], (got, want)


MULTI = ("SELECT 1 AS one; SELECT 2 AS two, 'b' AS bee; "
         "CREATE TEMPORARY TABLE compat_py.multi_tmp (i INT); "
         "INSERT INTO compat_py.multi_tmp VALUES (1), (2), (3); "
         "SELECT COUNT(*) AS n FROM compat_py.multi_tmp; "
         "SELECT @@warning_count AS w; "
         "DROP TEMPORARY TABLE compat_py.multi_tmp")


def test_multi_statements_pymysql():
    def run(target):
        conn = pymysql_connect(target, multi=True)
        try:
            res = pymysql_all_results(conn, MULTI)
            assert scalar(conn, "SELECT 'still in sync'") == "still in sync"
            return res
        finally:
            conn.close()

    got, want = both(run)
    assert got[:2] == [("rows", ["one"], [(1,)]), ("rows", ["two", "bee"], [(2, "b")])], got
    assert ("rows", ["n"], [(3,)]) in got
    assert got == want


def test_multi_statements_connector():
    def run(target):
        conn = connector_connect(target)
        try:
            res = connector_all_results(conn, MULTI)
            assert scalar(conn, "SELECT 'still in sync'") == "still in sync"
            return res
        finally:
            conn.close()

    got, want = both(run)
    assert got[0] == ("rows", ["one"], [(1,)]), got
    assert got == want


def test_multi_statement_error_in_the_middle():
    """The results before the failing statement arrive, then its error; nothing after it runs."""
    def run(target):
        conn = pymysql_connect(target, multi=True)
        try:
            cur = conn.cursor()
            cur.execute("SELECT 1; SELEC 2; SELECT 3")
            first = cur.fetchall()
            with pytest.raises(pymysql.err.ProgrammingError) as info:
                cur.nextset()
            cur.close()
            after = scalar(conn, "SELECT 'still in sync'")
            return first, info.value.args[0], after
        finally:
            conn.close()

    got, want = both(run)
    assert got == (((1,),), 1064, "still in sync"), got
    assert got == want


def test_multi_statements_refused_without_the_flag():
    """Without CLIENT_MULTI_STATEMENTS the server refuses 'SELECT 1; SELECT 2' (1064)."""
    def run(target):
        conn = pymysql_connect(target)  # PyMySQL does not ask for MULTI_STATEMENTS by default
        try:
            with pytest.raises(pymysql.err.ProgrammingError) as info:
                query(conn, "SELECT 1; SELECT 2")
            return info.value.args[0], scalar(conn, "SELECT 3")
        finally:
            conn.close()

    got, want = both(run)
    assert got == want == (1064, 3), (got, want)


def test_row_count_and_found_rows_inside_multi_statement():
    """ROW_COUNT()/FOUND_ROWS() in a multi-statement query refer to the statement before them in
    the same query."""
    def run(target):
        conn = pymysql_connect(target, multi=True)
        try:
            query(conn, "CREATE TABLE IF NOT EXISTS compat_py.rc (i INT)")
            query(conn, "DELETE FROM compat_py.rc")
            return pymysql_all_results(
                conn, "INSERT INTO compat_py.rc VALUES (1), (2); SELECT ROW_COUNT() AS rc; "
                      "SELECT i FROM compat_py.rc ORDER BY i; SELECT FOUND_ROWS() AS fr, "
                      "ROW_COUNT() AS rc")
        finally:
            conn.close()

    got, want = both(run)
    assert want == [("ok", 2), ("rows", ["rc"], [(2,)]), ("rows", ["i"], [(1,), (2,)]),
                    ("rows", ["fr", "rc"], [(2, -1)])], want
    assert got == want
