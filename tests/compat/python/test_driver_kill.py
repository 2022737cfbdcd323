"""Driver battery, KILL (marker `kill`: COMPAT_FILTER=kill makes run.sh run only these): for
PyMySQL, mysql-connector-python (text and prepared cursor) and mysqlclient, connection B (same
user) kills what connection A runs, by A's CONNECTION_ID():
  * KILL QUERY n while A runs SELECT SLEEP(5): A's statement ends early (1317, or SLEEP returns
    1), A stays usable with the same CONNECTION_ID();
  * KILL n (KILL CONNECTION): A's next statement fails with a connection error, a new
    connection works; the same with the driver's COM_PROCESS_KILL (kill() / cmd_process_kill());
  * KILL QUERY of an idle connection is OK; KILL of an unknown id is error 1094.
B waits until A's statement runs by polling information_schema.PROCESSLIST on every server
directly (primary and replicas, admin account). Every wait is bounded (driver read timeouts of
30 s, thread joins, a 60 s pytest timeout per check): a hang fails the check.
"""

import threading
import time
import uuid

import pytest

from conftest import direct, pymysql_connect, scalar, server_ports

pytestmark = [pytest.mark.kill, pytest.mark.timeout(60)]

SLEEP = 5
UNKNOWN_ID = 2147483647


def connection_id(d, conn):
    return d.run(conn, "SELECT CONNECTION_ID()")[0][0]


def wait_until_running(marker, timeout=15):
    """Polls every server of the environment until a statement containing marker runs there."""
    admin = direct()
    conns = []
    try:
        for port in server_ports():
            admin.port = port
            conns.append(pymysql_connect(admin, read_timeout=10))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for conn in conns:
                if scalar(conn, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                                "WHERE ID <> CONNECTION_ID() AND INFO LIKE %s", (f"%{marker}%",)):
                    return
            time.sleep(0.01)  # poll interval
        raise AssertionError(f"the statement {marker} never showed up in any PROCESSLIST")
    finally:
        for conn in conns:
            conn.close()


class Statement(threading.Thread):
    """Runs one statement of connection conn in the background; records rows or the error and
    how long it took."""

    def __init__(self, d, conn, sql):
        super().__init__(daemon=True)
        self.d, self.conn, self.sql = d, conn, sql
        self.rows = self.error = self.elapsed = None

    def run(self):
        t0 = time.monotonic()
        try:
            self.rows = self.d.run(self.conn, self.sql)
        except Exception as e:  # noqa: BLE001
            self.error = e
        self.elapsed = time.monotonic() - t0

    def finish(self, timeout=30):
        self.join(timeout)
        assert not self.is_alive(), f"{self.sql!r} still running {timeout}s later"


def assert_gone(d, conn):
    """conn's next statement fails with a connection error."""
    with pytest.raises(d.Error) as info:
        d.run(conn, "SELECT 1")
    assert d.lost(info.value), f"not a connection error: {info.value!r}"


def test_kill_query_running_statement(driver, new_conn):
    d = driver
    a, b = new_conn(), new_conn()
    n = connection_id(d, a)
    marker = f"compat_kill_{uuid.uuid4().hex}"
    stmt = Statement(d, a, f"SELECT SLEEP({SLEEP}) /* {marker} */")
    stmt.start()
    try:
        wait_until_running(marker)
        d.run(b, f"KILL QUERY {n}")
    finally:
        stmt.finish()
    if stmt.error is not None:
        assert d.errno(stmt.error) == 1317, f"{stmt.error!r}"
    else:
        assert stmt.rows == [(1,)], "SLEEP was not interrupted"
    assert stmt.elapsed < SLEEP - 1, f"the statement ran {stmt.elapsed:.1f}s"
    assert d.run(a, "SELECT 1") == [(1,)]
    assert connection_id(d, a) == n


def test_kill_connection(driver, new_conn):
    d = driver
    a, b = new_conn(), new_conn()
    n = connection_id(d, a)
    d.run(b, f"KILL {n}")
    assert_gone(d, a)
    assert d.run(new_conn(), "SELECT 1") == [(1,)]


def test_kill_query_idle_connection(driver, new_conn):
    d = driver
    a, b = new_conn(), new_conn()
    n = connection_id(d, a)
    d.run(b, f"KILL QUERY {n}")
    assert d.run(a, "SELECT 1") == [(1,)]
    assert connection_id(d, a) == n


@pytest.mark.parametrize("sql", [f"KILL {UNKNOWN_ID}", f"KILL QUERY {UNKNOWN_ID}"])
def test_kill_unknown_id(driver, new_conn, sql):
    d = driver
    with pytest.raises(d.Error) as info:
        d.run(new_conn(), sql)
    assert d.errno(info.value) == 1094


def test_protocol_kill(driver, new_conn):
    """COM_PROCESS_KILL: kills the connection; an unknown id is 1094."""
    d = driver
    if d.protocol_kill is None:
        pytest.skip(f"{d.name} has no COM_PROCESS_KILL API")
    a, b = new_conn(), new_conn()
    n = connection_id(d, a)
    d.protocol_kill(b, n)
    assert_gone(d, a)
    with pytest.raises(d.Error) as info:
        d.protocol_kill(b, UNKNOWN_ID)
    assert d.errno(info.value) == 1094
    assert d.run(b, "SELECT 1") == [(1,)]
