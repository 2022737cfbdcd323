"""Shared helpers for the Python compat suite.

Environments come from tests/compat/run.sh (see lib.sh): `main` (TESSERA_PORT, MARIADB_PORT),
`pool2` (TESSERA_POOL2_PORT, ... : --pool-max 2), `ps` (TESSERA_PS_PORT, ...: --pool-max 4
--prepared-cache 64) and `sha2` (TESSERA_SHA2_PORT: --auth-plugin caching_sha2_password).

Set COMPAT_TARGET=direct to point every "Tessera" connection at the environment's MariaDB
instead (as user tessera): a control run that checks the expectations of the tests themselves.
With COMPAT_DIRECT=1 (tests/compat/run.sh --direct) TESSERA_PORT already is the main MariaDB
(user app): the checks of `main` run against it, and everything that needs one of Tessera's
other environments (pool2, state, ps, sha2) skips, as do the checks of Tessera-only behaviour.

The driver battery (test_driver_battery.py, test_driver_kill.py) runs one set of checks over the
`driver` fixture: PyMySQL, mysql-connector-python (text protocol and prepared cursor) and
mysqlclient (MySQLdb, on MariaDB Connector/C), all as user app on the main environment.
"""

import contextlib
import datetime
import os
import socket
import struct

import MySQLdb
import mysql.connector
import pymysql
import pytest
from pymysql.constants import CLIENT

def _patch_connector_binary_decoding():
    """Works around two bugs of Connector/Python's pure-Python binary-row decoder (not Tessera's),
    so that the binary protocol bytes Tessera passes on are judged, not the driver's decoding:

    * MYSQL_TYPE_YEAR is not known: it is read as a length-encoded string and the rest of the
      row is decoded from the wrong offset. YEAR is a 2-byte integer, like SHORT.
    * A negative TIME only negates its days part, both ways: -838:59:59 is decoded as
      -34 days + 22:59:59, and timedelta(microseconds=-1) is sent as -1 day 23:59:59.999999.
    """
    from mysql.connector.constants import FieldType
    from mysql.connector.protocol import MySQLProtocol

    if getattr(MySQLProtocol, "_compat_patched", False):
        return
    original = MySQLProtocol._parse_binary_values

    def parse_binary_values(self, fields, packet, charset="utf-8"):
        fields = [(f[0], FieldType.SHORT) + tuple(f[2:]) if f[1] == FieldType.YEAR else f
                  for f in fields]
        return original(self, fields, packet, charset)

    def parse_binary_time(packet):
        length = packet[0]
        if not length:
            return packet[1:], datetime.timedelta()
        data = packet[1:length + 1]
        mcs = struct.unpack("<I", data[8:12])[0] if length > 8 else 0
        value = datetime.timedelta(days=struct.unpack("<I", data[1:5])[0], hours=data[5],
                                   minutes=data[6], seconds=data[7], microseconds=mcs)
        return packet[length + 1:], -value if data[0] == 1 else value

    original_prepare_time = MySQLProtocol.prepare_binary_time

    def prepare_binary_time(value):
        if isinstance(value, datetime.timedelta) and value < datetime.timedelta(0):
            packed, field_type = original_prepare_time(-value)
            return packed[:1] + b"\x01" + packed[2:], field_type
        return original_prepare_time(value)

    MySQLProtocol.prepare_binary_time = staticmethod(prepare_binary_time)
    MySQLProtocol._parse_binary_values = parse_binary_values
    MySQLProtocol._parse_binary_time = staticmethod(parse_binary_time)
    MySQLProtocol._compat_patched = True


_patch_connector_binary_decoding()

HOST = os.environ.get("TESSERA_HOST", "127.0.0.1")
CONTROL = os.environ.get("COMPAT_TARGET", "") == "direct"
DIRECT = os.environ.get("COMPAT_DIRECT", "0") == "1"
# Checks of Tessera's own behaviour (its pools, metrics, error texts) skip in both control modes.
tessera_only = pytest.mark.skipif(CONTROL or DIRECT, reason="Tessera-only behaviour (direct mode)")
DB = "compat_py"


class Target:
    def __init__(self, name, port, user, password, via):
        self.name, self.port, self.user, self.password, self.via = name, port, user, password, via

    def __repr__(self):
        return f"<{self.via} {self.name} :{self.port}>"


def _env(var):
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"environment variable {var} is not set (run through tests/compat/run.sh)")
    return value


def direct(env="main"):
    """MariaDB behind the environment, directly (user tessera, all privileges)."""
    var = "MARIADB_PORT" if env == "main" else f"TESSERA_{env.upper()}_MARIADB_PORT"
    return Target(env, int(_env(var)), os.environ.get("MARIADB_USER", "tessera"),
                  os.environ.get("MARIADB_PASSWORD", "tessera"), "mariadb")


def tessera(env="main"):
    """Tessera of the environment (user app)."""
    if CONTROL:
        return direct(env)
    if DIRECT and env != "main":
        pytest.skip(f"Tessera's '{env}' environment: Tessera-only (COMPAT_DIRECT=1)")
    var = "TESSERA_PORT" if env == "main" else f"TESSERA_{env.upper()}_PORT"
    return Target(env, int(_env(var)), os.environ.get("TESSERA_USER", "app"),
                  os.environ.get("TESSERA_PASSWORD", "app"), "tessera")


def pymysql_connect(target, multi=False, found_rows=False, **kw):
    flags = kw.pop("client_flag", 0)
    if multi:
        flags |= CLIENT.MULTI_STATEMENTS
    if found_rows:
        flags |= CLIENT.FOUND_ROWS
    kw.setdefault("charset", "utf8mb4")
    kw.setdefault("autocommit", True)
    kw.setdefault("connect_timeout", 20)
    kw.setdefault("read_timeout", 120)
    return pymysql.connect(host=HOST, port=target.port, user=target.user,
                           password=target.password, client_flag=flags, **kw)


def connector_connect(target, **kw):
    kw.setdefault("charset", "utf8mb4")
    # Connector/Python defaults to utf8mb4_0900_ai_ci, which MariaDB does not have.
    kw.setdefault("collation", "utf8mb4_general_ci")
    kw.setdefault("autocommit", True)
    kw.setdefault("use_pure", True)
    kw.setdefault("connection_timeout", 20)
    kw.setdefault("ssl_disabled", True)
    conn = mysql.connector.connect(host=HOST, port=target.port, user=target.user,
                                   password=target.password, **kw)
    # Connector/Python leaves Nagle on: its COM_STMT_CLOSE (no reply) followed by the next
    # COM_STMT_PREPARE then waits for a delayed ACK, ~40 ms per prepared statement.
    with contextlib.suppress(AttributeError, OSError):
        conn._socket.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def query(conn, sql, args=None):
    """Runs one statement on a PyMySQL or Connector/Python connection, returns all rows."""
    cur = conn.cursor()
    try:
        cur.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []
    finally:
        cur.close()


def scalar(conn, sql, args=None):
    rows = query(conn, sql, args)
    assert len(rows) == 1 and len(rows[0]) == 1, f"{sql!r}: expected one value, got {rows!r}"
    return rows[0][0]


@pytest.fixture(scope="session")
def compat_db():
    """Creates the database compat_py (through Tessera) once per run."""
    conn = pymysql_connect(tessera())
    try:
        query(conn, f"DROP DATABASE IF EXISTS {DB}")
        query(conn, f"CREATE DATABASE {DB} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    finally:
        conn.close()
    return DB


# --- The driver battery: one interface over the three drivers --------------------------------

# Every read of the battery's connections is bounded: a hang (e.g. after a KILL) fails the
# check instead of blocking the suite.
READ_TIMEOUT = 30
# Driver errors that mean "the connection is gone" (connector: -1 "MySQL Connection not
# available", PyMySQL: 0 on a closed connection; 1927 Connection was killed; 2006/2013/2055
# server gone / lost connection).
CONNECTION_LOST = {-1, 0, 1158, 1927, 2006, 2013, 2055}


def app(second=False):
    """The main environment as the application user (app, or app2 with second=True): Tessera,
    or MariaDB itself with COMPAT_DIRECT=1 (then TESSERA_PORT is MariaDB's port)."""
    suffix = "2" if second else ""
    port = _env("MARIADB_PORT" if CONTROL else "TESSERA_PORT")
    return Target("main", int(port), os.environ.get(f"TESSERA_USER{suffix}", f"app{suffix}"),
                  os.environ.get(f"TESSERA_PASSWORD{suffix}", f"app{suffix}"),
                  "mariadb" if CONTROL or DIRECT else "tessera")


def server_ports():
    """Every MariaDB of the main environment (primary first, then the replicas)."""
    replicas = os.environ.get("MARIADB_REPLICA_PORTS", "")
    return [int(_env("MARIADB_PORT"))] + [int(p) for p in replicas.split(",") if p.strip()]


class Driver:
    """What the battery needs of a driver: connect, run one statement, read an error.
    change_user / protocol_kill are None where the driver has no API for them."""

    name = ""
    prepared = False
    Error = Exception
    change_user = None
    protocol_kill = None
    local_infile = True

    def __repr__(self):
        return self.name

    def cursor(self, conn):
        return conn.cursor()

    def run(self, conn, sql):
        """Runs one statement (no parameters) and returns its rows as a list of tuples."""
        cur = self.cursor(conn)
        try:
            cur.execute(sql)
            return [tuple(r) for r in cur.fetchall()] if cur.description else []
        finally:
            cur.close()

    def affected(self, conn, sql):
        cur = self.cursor(conn)
        try:
            cur.execute(sql)
            return cur.rowcount
        finally:
            cur.close()

    def errno(self, exc):
        return exc.args[0] if exc.args else None

    def errmsg(self, exc):
        return exc.args[1] if len(exc.args) > 1 else str(exc)

    def lost(self, exc):
        return self.errno(exc) in CONNECTION_LOST


class PyMySQL(Driver):
    name = "pymysql"
    Error = pymysql.err.MySQLError

    def connect(self, target, **kw):
        return pymysql_connect(target, database=DB, local_infile=True,
                               read_timeout=READ_TIMEOUT, write_timeout=READ_TIMEOUT, **kw)

    @staticmethod
    def protocol_kill(conn, thread_id):
        conn.kill(thread_id)  # COM_PROCESS_KILL


class Connector(Driver):
    name = "connector"
    Error = mysql.connector.Error

    def __init__(self, prepared=False):
        self.prepared = prepared
        if prepared:
            self.name = "connector_prepared"
            # The prepared cursor cannot answer the server's LOCAL INFILE request.
            self.local_infile = False

    def connect(self, target, **kw):
        # connection_timeout is the socket timeout of every read, too.
        return connector_connect(target, database=DB, allow_local_infile=True,
                                 connection_timeout=READ_TIMEOUT, **kw)

    def cursor(self, conn):
        return conn.cursor(prepared=self.prepared)

    @staticmethod
    def change_user(conn, user, password):
        conn.cmd_change_user(username=user, password=password)

    @staticmethod
    def protocol_kill(conn, thread_id):
        conn.cmd_process_kill(thread_id)

    def errno(self, exc):
        return exc.errno

    def errmsg(self, exc):
        return exc.msg


class MySQLClient(Driver):
    name = "mysqlclient"
    Error = MySQLdb.MySQLError

    def connect(self, target, **kw):
        return MySQLdb.connect(host=HOST, port=target.port, user=target.user,
                               password=target.password, database=DB, charset="utf8mb4",
                               autocommit=True, local_infile=1, connect_timeout=20,
                               read_timeout=READ_TIMEOUT, write_timeout=READ_TIMEOUT, **kw)

    @staticmethod
    def change_user(conn, user, password):
        conn.change_user(user, password)  # mysql_change_user(): COM_CHANGE_USER

    @staticmethod
    def protocol_kill(conn, thread_id):
        conn.kill(thread_id)  # mysql_kill(): COM_PROCESS_KILL


DRIVERS = {d.name: d for d in (PyMySQL(), Connector(), Connector(prepared=True), MySQLClient())}


@pytest.fixture(params=list(DRIVERS))
def driver(request):
    return DRIVERS[request.param]


@pytest.fixture
def new_conn(driver, compat_db):
    """new_conn(second=False): a new connection of the driver as app (app2 with second=True),
    in database compat_py; closed at the end of the test."""
    conns = []

    def open_connection(second=False):
        conn = driver.connect(app(second))
        conns.append(conn)
        return conn

    yield open_connection
    for conn in conns:
        with contextlib.suppress(Exception):
            conn.close()


@pytest.fixture
def table(driver, compat_db):
    """A table of this driver's own: compat_py.bat_<driver> (id, note, amount), emptied."""
    name = f"{DB}.bat_{driver.name}"
    conn = pymysql_connect(app())
    try:
        query(conn, f"CREATE TABLE IF NOT EXISTS {name} (id INT AUTO_INCREMENT PRIMARY KEY, "
                    "note VARCHAR(40) NOT NULL, amount INT NOT NULL DEFAULT 0, KEY (note))")
        query(conn, f"DELETE FROM {name}")
    finally:
        conn.close()
    return name
