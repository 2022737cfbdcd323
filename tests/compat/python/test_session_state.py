"""Session state survives Tessera's multiplexing (environment `state`: --pool-max 2, used by no
other test, so its backend connections start fresh).

Each case sets some state in a client session A, then:
  1. checks it on the backend connection S where the SET ran,
  2. moves A to the other backend connection P (a holder session keeps S in a transaction, so
     A's next statement cannot run on S) and checks again: Tessera must have replayed the state,
  3. checks that the holder session (running on S, where A's SET ran) sees the defaults: A's
     state must not leak into another session.
The expected values come from MariaDB itself: the same SQL on a direct connection.

The last tests repeat a few cases after both backend connections were reset (a client that
disconnects inside a transaction makes Tessera reset the connection with COM_RESET_CONNECTION).
"""

import contextlib
import datetime as dt
from decimal import Decimal

import pymysql
import pytest

from conftest import direct, pymysql_connect, query, scalar, tessera, tessera_only

ENV = "state"
pytestmark = tessera_only  # needs Tessera's connection multiplexing


def backend_id(conn):
    """The thread id of the backend connection the session runs on. (Not CONNECTION_ID(): Tessera
    answers that with its own connection id, the one KILL takes; @@pseudo_thread_id is the
    backend's thread id unless a client sets it.)"""
    return scalar(conn, "SELECT @@pseudo_thread_id")


@pytest.fixture(scope="module")
def dbs():
    conn = pymysql_connect(tessera(ENV))
    try:
        for name in ("a", "b"):
            query(conn, f"CREATE DATABASE IF NOT EXISTS compat_py_state_{name}")
            query(conn, f"CREATE TABLE IF NOT EXISTS compat_py_state_{name}.marker (v VARCHAR(10))")
            query(conn, f"DELETE FROM compat_py_state_{name}.marker")
            query(conn, f"INSERT INTO compat_py_state_{name}.marker VALUES ('{name}')")
        query(conn, "CREATE DATABASE IF NOT EXISTS compat_py")
    finally:
        conn.close()


class Mover:
    """Two holder sessions that can pin down backend connections with open transactions."""

    def __init__(self, target):
        self.h1 = connect(target)
        self.h2 = connect(target)

    def close(self):
        for h in (self.h1, self.h2):
            with contextlib.suppress(Exception):
                h.close()

    def run_on_known_backend(self, conn, sqls, check=None):
        """Runs sqls (then check) on conn while h1 holds the other backend connection; returns
        S (the id of the backend connection they ran on), P (the other one) and the result of
        check."""
        query(self.h1, "BEGIN")
        p = backend_id(self.h1)
        try:
            for sql in sqls:
                query(conn, sql)
            s = backend_id(conn)
            result = query(conn, check) if check else None
            # A check with warnings pins the session until its next statement (SHOW WARNINGS
            # must see them): one more statement ends that pin.
            query(conn, "DO 0")
        finally:
            query(self.h1, "COMMIT")
        assert s != p, "with --pool-max 2 and one connection held, the other one must be used"
        return s, p, result

    @contextlib.contextmanager
    def holding(self, s):
        """Holds backend connection s in a transaction (and only it) for the duration."""
        query(self.h1, "BEGIN")
        x1 = backend_id(self.h1)
        query(self.h2, "BEGIN")
        x2 = backend_id(self.h2)
        assert s in (x1, x2), (s, x1, x2)
        keep, free = (self.h1, self.h2) if x1 == s else (self.h2, self.h1)
        query(free, "COMMIT")
        try:
            yield keep
        finally:
            query(keep, "COMMIT")


def connect(target, **kw):
    """Every session of this module starts in database demo: a session without a default
    database makes Tessera open a fresh backend connection (MariaDB cannot unset it), which
    would change the backend connections under the test."""
    kw.setdefault("database", "demo")
    return pymysql_connect(target, **kw)


def fresh_direct_result(sqls, check):
    conn = connect(direct(ENV))
    try:
        for sql in sqls:
            query(conn, sql)
        return query(conn, check)
    finally:
        conn.close()


# (name, SETs, check query)
CASES = [
    ("time_zone", ["SET time_zone = '+05:30'"],
     "SELECT @@time_zone, TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW()), "
     "CAST(FROM_UNIXTIME(0) AS CHAR)"),
    ("sql_mode_ansi_quotes", ["SET sql_mode = 'ANSI_QUOTES'"],
     'SELECT @@sql_mode, (SELECT "name" FROM demo.customers WHERE id = 1)'),
    ("sql_mode_pipes_as_concat", ["SET sql_mode = 'PIPES_AS_CONCAT'"], "SELECT 'a' || 'b'"),
    ("user_variable", ["SET @v = 'client A', @n = 42, @d = 1.5"], "SELECT @v, @n, @d"),
    ("user_variable_select_into", ["SELECT 7 INTO @w"], "SELECT @w"),
    ("user_variable_assign_in_select", ["SELECT @z := 'assigned'"], "SELECT @z"),
    ("use_db", ["USE compat_py_state_a"],
     "SELECT DATABASE(), (SELECT COUNT(*) FROM information_schema.tables "
     "WHERE table_schema = DATABASE() AND table_name = 'marker')"),
    ("tx_isolation", ["SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"],
     "SELECT @@tx_isolation"),
    ("tx_read_only", ["SET SESSION TRANSACTION READ ONLY"], "SELECT @@tx_read_only"),
    ("lc_time_names", ["SET lc_time_names = 'de_DE'"],
     "SELECT @@lc_time_names, DATE_FORMAT('2024-01-01', '%W %M')"),
    ("div_precision_increment", ["SET div_precision_increment = 9"], "SELECT 1/3"),
    ("group_concat_max_len", ["SET SESSION group_concat_max_len = 7"],
     "SELECT GROUP_CONCAT('abcdefghij')"),
    ("sql_select_limit", ["SET SESSION sql_select_limit = 2"],
     "SELECT id FROM demo.customers ORDER BY id"),
    ("max_statement_time", ["SET SESSION max_statement_time = 12.5"],
     "SELECT @@max_statement_time"),
    ("names_latin1", ["SET NAMES latin1"],
     "SELECT @@character_set_client, @@character_set_connection, @@character_set_results"),
    ("several_at_once", ["SET time_zone = '-03:00', sql_mode = 'ANSI', @v = 'multi'"],
     "SELECT @@time_zone, @@sql_mode, @v"),
    ("set_statement_for_is_one_shot",
     ["SET STATEMENT time_zone = '+09:00' FOR SELECT 1", "SET @x = 1"],
     "SELECT @@time_zone, @x"),
]
IDS = [c[0] for c in CASES]


def check_case(target, sqls, check, label):
    want = fresh_direct_result(sqls, check)
    default = fresh_direct_result([], check)
    assert want != default, f"{label}: the check cannot tell the state from the default"
    a = connect(target)
    mover = Mover(target)
    try:
        s, p, first = mover.run_on_known_backend(a, sqls, check)
        assert first == want, f"{label}: wrong on the connection where SET ran"
        with mover.holding(s) as holder:
            got = query(a, check)
            a_now = backend_id(a)
            seen_by_holder = query(holder, check)
        assert a_now == p, f"{label}: A did not move ({a_now} vs S={s}, P={p})"
        assert got == want, f"{label}: after moving to another backend connection"
        assert seen_by_holder == default, f"{label}: state leaked into another session"
    finally:
        a.close()
        mover.close()


@pytest.mark.parametrize("name,sqls,check", CASES, ids=IDS)
def test_state_follows_the_session(dbs, name, sqls, check):
    check_case(tessera(ENV), sqls, check, name)


def test_com_init_db_follows_the_session(dbs):
    """select_db() sends COM_INIT_DB."""
    target = tessera(ENV)
    a = connect(target)
    mover = Mover(target)
    try:
        s, p, _ = mover.run_on_known_backend(a, [])
        a.select_db("compat_py_state_b")
        assert query(a, "SELECT DATABASE(), (SELECT v FROM marker)") == [("compat_py_state_b", "b")]
        s = backend_id(a)
        with mover.holding(s) as holder:
            assert query(a, "SELECT DATABASE(), (SELECT v FROM marker)") == [("compat_py_state_b", "b")]
            assert scalar(holder, "SELECT DATABASE()") == "demo"
    finally:
        a.close()
        mover.close()


def test_use_switches_back_and_forth(dbs):
    a = pymysql_connect(tessera(ENV))
    others = [pymysql_connect(tessera(ENV)) for _ in range(3)]
    try:
        for i in range(10):
            name = "ab"[i % 2]
            query(a, f"USE compat_py_state_{name}")
            for j, o in enumerate(others):  # the others use the other database
                query(o, f"USE compat_py_state_{'ba'[i % 2]}")
                assert scalar(o, "SELECT v FROM marker") == "ba"[i % 2]
            assert scalar(a, "SELECT v FROM marker") == name
            assert scalar(a, "SELECT DATABASE()") == f"compat_py_state_{name}"
    finally:
        a.close()
        for o in others:
            o.close()


def test_set_names_latin1_then_utf8mb4(dbs):
    """SET NAMES changes how the server reads the query text and encodes results."""
    target = tessera(ENV)
    a = connect(target)
    mover = Mover(target)
    try:
        a.set_character_set("latin1")  # sends SET NAMES latin1, and encodes/decodes latin1
        s, p, _ = mover.run_on_known_backend(a, [])
        expected = [("latin1", "E9", "C3A9", "é")]
        check = "SELECT @@character_set_client, HEX('é'), HEX(CONVERT('é' USING utf8mb4)), _utf8mb4 X'C3A9'"
        assert query(a, check) == expected
        with mover.holding(s):
            assert query(a, check) == expected, "SET NAMES latin1 not replayed"
        a.set_character_set("utf8mb4")
        check = "SELECT @@character_set_client, HEX('é'), 'héllo wörld 🚀'"
        s = backend_id(a)
        with mover.holding(s) as holder:
            assert query(a, check) == [("utf8mb4", "C3A9", "héllo wörld 🚀")]
            assert scalar(holder, "SELECT @@character_set_results") == "utf8mb4"
    finally:
        a.close()
        mover.close()


def test_unknown_variable_fails_like_mariadb(dbs):
    results = []
    for target in (tessera(ENV), direct(ENV)):
        conn = pymysql_connect(target)
        try:
            with pytest.raises(pymysql.err.OperationalError) as info:
                query(conn, "SET compat_no_such_variable = 1")
            with pytest.raises(pymysql.err.OperationalError) as info2:
                query(conn, "SET time_zone = '+01:00', compat_no_such_variable = 1")
            # A failed SET changes nothing.
            tz = scalar(conn, "SELECT @@time_zone")
            results.append((info.value.args, info2.value.args, tz))
        finally:
            conn.close()
    assert results[0][0][0] == 1193
    assert results[0] == results[1]


def test_timestamp_columns_follow_time_zone(dbs):
    """TIMESTAMP values are converted with the session time zone on every connection."""
    target = tessera(ENV)
    a = connect(target)
    mover = Mover(target)
    try:
        query(a, "CREATE TABLE IF NOT EXISTS compat_py.tz (ts TIMESTAMP(6) NULL)")
        query(a, "DELETE FROM compat_py.tz")
        query(a, "SET time_zone = '+00:00'")
        query(a, "INSERT INTO compat_py.tz VALUES ('2024-06-01 12:00:00.123456')")
        s, p, _ = mover.run_on_known_backend(a, ["SET time_zone = '+02:00'"])
        with mover.holding(s):
            assert scalar(a, "SELECT ts FROM compat_py.tz") == dt.datetime(2024, 6, 1, 14, 0, 0, 123456)
    finally:
        a.close()
        mover.close()


def reset_both_backends(target):
    """Two clients disconnect inside a transaction, one on each backend connection: Tessera
    resets both (COM_RESET_CONNECTION) before reusing them."""
    c1, c2 = connect(target), connect(target)
    query(c1, "BEGIN")
    id1 = backend_id(c1)
    query(c2, "BEGIN")
    id2 = backend_id(c2)
    assert id1 != id2
    c1.close()
    c2.close()


RESET_CASES = [c for c in CASES if c[0] in (
    "time_zone", "sql_mode_ansi_quotes", "tx_isolation", "lc_time_names", "user_variable")]


@pytest.mark.parametrize("name,sqls,check", RESET_CASES, ids=[c[0] for c in RESET_CASES])
def test_state_follows_the_session_after_backend_reset(dbs, name, sqls, check):
    target = tessera(ENV)
    reset_both_backends(target)
    check_case(target, sqls, check, name + " (after reset)")


def test_no_leak_to_the_next_client_after_backend_reset(dbs):
    """A client's SET must not stay behind for the next client, also on a connection that was
    reset before (a client disconnected inside a transaction). Sessions without a default
    database here, as `mariadb -e` uses them: they reuse the reset connections."""
    target = tessera(ENV)
    check = "SELECT @@sql_mode, @@lc_time_names, @@tx_isolation"
    default = fresh_direct_result([], check)
    c1, c2 = pymysql_connect(target), pymysql_connect(target)
    query(c1, "BEGIN")
    query(c1, "SELECT 1")
    query(c2, "BEGIN")
    query(c2, "SELECT 1")
    c1.close()
    c2.close()
    a = pymysql_connect(target)
    query(a, "SET sql_mode = 'ANSI_QUOTES', lc_time_names = 'de_DE', "
             "SESSION tx_isolation = 'SERIALIZABLE'")
    a.close()
    for _ in range(3):
        b = pymysql_connect(target)
        try:
            assert query(b, check) == default, "another client's SET leaked into this session"
        finally:
            b.close()


def test_session_tracking_survives_backend_reset(dbs):
    """Tessera depends on session_track_system_variables='*' on its backend connections."""
    target = tessera(ENV)
    reset_both_backends(target)
    conns = [connect(target) for _ in range(2)]
    try:
        query(conns[0], "BEGIN")
        query(conns[1], "BEGIN")
        for c in conns:
            # The backend's values (SELECT @@session_track_* answers the client's own ones).
            rows = query(c, "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM "
                            "information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME IN "
                            "('SESSION_TRACK_SYSTEM_VARIABLES', 'SESSION_TRACK_STATE_CHANGE')")
            assert dict(rows) == {"SESSION_TRACK_SYSTEM_VARIABLES": "*",
                                  "SESSION_TRACK_STATE_CHANGE": "ON"}, rows
            query(c, "COMMIT")
    finally:
        for c in conns:
            c.close()


def test_decimal_sanity():
    """Keeps the div_precision_increment expectation honest."""
    assert fresh_direct_result(["SET div_precision_increment = 9"], "SELECT 1/3") == \
        [(Decimal("0.333333333"),)]
