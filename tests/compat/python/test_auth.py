"""Logging in through Tessera: mysql_native_password (main) and caching_sha2_password (sha2,
fast path without TLS), a wrong password, a default database in the handshake."""

import mysql.connector
import pymysql
import pytest

from conftest import CONTROL, connector_connect, pymysql_connect, scalar, tessera

pytestmark = pytest.mark.skipif(CONTROL, reason="Tessera's users")


@pytest.mark.parametrize("env", ["main", "sha2"])
def test_login_both_drivers(env):
    target = tessera(env)
    for connect in (pymysql_connect, connector_connect):
        for _ in range(3):  # repeated logins (a sha2 cache, if any, must not matter)
            conn = connect(target)
            try:
                assert scalar(conn, "SELECT 'logged in'") == "logged in"
            finally:
                conn.close()


@pytest.mark.parametrize("env", ["main", "sha2"])
def test_wrong_password_is_1045(env):
    target = tessera(env)
    target.password = "wrong-password"
    with pytest.raises(pymysql.err.OperationalError) as info:
        pymysql_connect(target)
    assert info.value.args[0] == 1045
    assert "Access denied" in info.value.args[1]
    with pytest.raises(mysql.connector.Error) as info2:
        connector_connect(target)
    assert info2.value.errno == 1045
    assert info2.value.sqlstate == "28000"


def test_unknown_user_is_1045():
    target = tessera()
    target.user = "compat_nobody"
    with pytest.raises(pymysql.err.OperationalError) as info:
        pymysql_connect(target)
    assert info.value.args[0] == 1045


@pytest.mark.parametrize("env", ["main", "sha2"])
def test_database_in_handshake(env):
    conn = pymysql_connect(tessera(env), database="demo")
    try:
        assert scalar(conn, "SELECT DATABASE()") == "demo"
        assert scalar(conn, "SELECT COUNT(*) FROM customers") == 3
    finally:
        conn.close()


def test_unknown_database_in_handshake():
    with pytest.raises(pymysql.err.OperationalError) as info:
        pymysql_connect(tessera(), database="compat_no_such_db")
    assert info.value.args[0] == 1049
    with pytest.raises(mysql.connector.Error) as info2:
        connector_connect(tessera(), database="compat_no_such_db")
    assert info2.value.errno == 1049
    assert info2.value.sqlstate == "42000"


def test_change_user_and_reset_connection():
    """COM_RESET_CONNECTION and COM_CHANGE_USER (Connector/Python) start the session over."""
    conn = connector_connect(tessera())
    try:
        cur = conn.cursor()
        cur.execute("SET @v = 1, time_zone = '+04:00'")
        conn.cmd_reset_connection()
        cur = conn.cursor()
        cur.execute("SELECT @v, @@time_zone")
        assert cur.fetchall() == [(None, "SYSTEM")]
        conn.cmd_change_user(username="app", password="app", database="demo")
        cur = conn.cursor()
        cur.execute("SELECT DATABASE(), @v")
        assert cur.fetchall() == [("demo", None)]
    finally:
        conn.close()
