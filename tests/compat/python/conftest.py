"""Shared helpers for the Python compat suite.

Environments come from tests/compat/run.sh (see lib.sh): `main` (TESSERA_PORT, MARIADB_PORT),
`pool2` (TESSERA_POOL2_PORT, ... : --pool-max 2), `ps` (TESSERA_PS_PORT, ...: --pool-max 4
--prepared-cache 64) and `sha2` (TESSERA_SHA2_PORT: --auth-plugin caching_sha2_password).

Set COMPAT_TARGET=direct to point every "Tessera" connection at the environment's MariaDB
instead (as user tessera): a control run that checks the expectations of the tests themselves.
"""

import contextlib
import datetime
import os
import socket
import struct

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
