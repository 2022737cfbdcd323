"""Round trip of every column type through Tessera, with three client paths:

* pymysql            - text protocol (COM_QUERY, client-side escaping)
* connector_prepared - Connector/Python cursor(prepared=True): COM_STMT_PREPARE/EXECUTE,
                       binary protocol both for the parameters and the result rows
* connector_text     - Connector/Python plain cursor (text protocol, another driver)

Each path writes the same value matrix through Tessera, reads it back through Tessera and
compares every value with what was written; the stored bytes are also checked directly on
MariaDB (so a failure tells whether the write or the read path is wrong).
"""

import datetime as dt
import hashlib
import io
import json
import random
import struct
from decimal import Decimal

import pytest

from conftest import connector_connect, direct, pymysql_connect, query, scalar, tessera

D = dt.datetime
TD = dt.timedelta

# A 1 MiB BLOB with every byte value, 0x00 and 0xFF included, deterministic.
_rng = random.Random(20261121)
MB_BLOB = bytes(range(256)) * 16 + bytes(_rng.getrandbits(8) for _ in range(1024 * 1024 - 4096))
assert len(MB_BLOB) == 1024 * 1024 and b"\x00" in MB_BLOB and b"\xff" in MB_BLOB

UNICODE = "héllo wörld 🚀"
TRICKY = "quote ' dq \" bs \\ nl \n cr \r tab \t nul \0 pct %s %% qm ? end"


def point(x, y):
    """MariaDB's internal GEOMETRY value: SRID (4 bytes LE) + WKB point."""
    return struct.pack("<I", 0) + struct.pack("<BIdd", 1, 1, x, y)


# (name, column definition, kind). kind picks how values are compared.
COLUMNS = [
    ("c_tinyint", "TINYINT", "int"),
    ("c_tinyint_u", "TINYINT UNSIGNED", "int"),
    ("c_bool", "BOOLEAN", "int"),
    ("c_smallint", "SMALLINT", "int"),
    ("c_smallint_u", "SMALLINT UNSIGNED", "int"),
    ("c_mediumint", "MEDIUMINT", "int"),
    ("c_mediumint_u", "MEDIUMINT UNSIGNED", "int"),
    ("c_int", "INT", "int"),
    ("c_int_u", "INT UNSIGNED", "int"),
    ("c_bigint", "BIGINT", "int"),
    ("c_bigint_u", "BIGINT UNSIGNED", "int"),
    ("c_decimal", "DECIMAL(65,30)", "decimal"),
    ("c_decimal2", "DECIMAL(10,2)", "decimal"),
    ("c_float", "FLOAT", "float"),
    ("c_double", "DOUBLE", "double"),
    ("c_bit1", "BIT(1)", "bit"),
    ("c_bit12", "BIT(12)", "bit"),
    ("c_bit64", "BIT(64)", "bit"),
    ("c_enum", "ENUM('red','green','blue')", "str"),
    ("c_set", "SET('a','b','c','d')", "set"),
    ("c_json", "JSON", "json"),
    ("c_year", "YEAR", "int"),
    ("c_date", "DATE", "date"),
    ("c_datetime", "DATETIME(6)", "datetime"),
    ("c_time", "TIME(6)", "time"),
    ("c_timestamp", "TIMESTAMP(6) NULL DEFAULT NULL", "datetime"),
    ("c_datetime0", "DATETIME", "datetime"),
    ("c_char", "CHAR(10)", "str"),
    ("c_varchar", "VARCHAR(255)", "str"),
    ("c_tinytext", "TINYTEXT", "str"),
    ("c_text", "TEXT", "str"),
    ("c_mediumtext", "MEDIUMTEXT", "str"),
    ("c_longtext", "LONGTEXT", "str"),
    ("c_latin1", "VARCHAR(32) CHARACTER SET latin1", "str"),
    ("c_binary", "BINARY(4)", "bytes"),
    ("c_varbinary", "VARBINARY(64)", "bytes"),
    ("c_tinyblob", "TINYBLOB", "bytes"),
    ("c_blob", "BLOB", "bytes"),
    ("c_mediumblob", "MEDIUMBLOB", "bytes"),
    ("c_longblob", "LONGBLOB", "bytes"),
    ("c_inet4", "INET4", "str"),
    ("c_inet6", "INET6", "str"),
    ("c_uuid", "UUID", "str"),
    ("c_point", "POINT", "geometry"),
]
NAMES = [c[0] for c in COLUMNS]
KIND = {c[0]: c[2] for c in COLUMNS}

# Rows: id -> {column: value written}. Columns left out are NULL.
ROWS = {
    1: {
        "c_tinyint": -128, "c_tinyint_u": 255, "c_bool": 1, "c_smallint": -32768,
        "c_smallint_u": 65535, "c_mediumint": -8388608, "c_mediumint_u": 16777215,
        "c_int": -2147483648, "c_int_u": 4294967295, "c_bigint": -9223372036854775808,
        "c_bigint_u": 18446744073709551615,
        "c_decimal": Decimal("12345678901234567890123456789012345.123456789012345678901234567890"),
        "c_decimal2": Decimal("-99999999.99"),
        "c_float": 3.14159, "c_double": 2.718281828459045,
        "c_bit1": 1, "c_bit12": 0xABC, "c_bit64": 0xFFFFFFFFFFFFFFFF,
        "c_enum": "green", "c_set": "a,c",
        "c_json": json.dumps({"a": [1, 2.5, "x", None, True], "u": UNICODE, "n": {"k": []}},
                             ensure_ascii=False),
        "c_year": 2024, "c_date": dt.date(2024, 2, 29),
        "c_datetime": D(2024, 2, 29, 23, 59, 59, 123456),
        "c_time": TD(hours=12, minutes=34, seconds=56, microseconds=789012),
        "c_timestamp": D(2024, 2, 29, 12, 34, 56, 654321),
        "c_datetime0": D(2001, 9, 9, 1, 46, 40),
        "c_char": "héllo", "c_varchar": UNICODE, "c_tinytext": UNICODE,
        "c_text": (UNICODE + "\n") * 100, "c_mediumtext": "€" * 70000,
        "c_longtext": "ok 🚀 " * 50000, "c_latin1": "café crème",
        "c_binary": b"\x00\xff\x00\xff", "c_varbinary": b"\x00\xff\x01\xfe\x7f\x80\x00",
        "c_tinyblob": b"\xff\x00" * 100, "c_blob": bytes(range(256)) * 4,
        "c_mediumblob": b"\x00" * 70000 + b"\xff", "c_longblob": MB_BLOB,
        "c_inet4": "192.0.2.255", "c_inet6": "2001:db8::1", "c_uuid": "123e4567-e89b-12d3-a456-426614174000",
        "c_point": (1.5, -2.25),
    },
    2: {
        "c_tinyint": 127, "c_tinyint_u": 0, "c_bool": 0, "c_smallint": 32767,
        "c_smallint_u": 0, "c_mediumint": 8388607, "c_mediumint_u": 0,
        "c_int": 2147483647, "c_int_u": 0, "c_bigint": 9223372036854775807, "c_bigint_u": 0,
        "c_decimal": Decimal("-0.000000000000000000000000000001"),
        "c_decimal2": Decimal("0.01"),
        "c_float": -1.5, "c_double": 1.7976931348623157e308,
        "c_bit1": 0, "c_bit12": 0, "c_bit64": 1,
        "c_enum": "red", "c_set": "",
        "c_json": "[]",
        "c_year": 1901, "c_date": dt.date(1000, 1, 1),
        "c_datetime": D(1000, 1, 1, 0, 0, 0, 1),
        "c_time": -TD(hours=838, minutes=59, seconds=59),
        "c_timestamp": D(1970, 1, 1, 0, 0, 1, 1),
        "c_datetime0": D(1999, 12, 31, 23, 59, 59),
        "c_char": "", "c_varchar": TRICKY, "c_tinytext": "", "c_text": "", "c_mediumtext": "",
        "c_longtext": "", "c_latin1": "",
        "c_binary": b"\xff\xff\xff\xff", "c_varbinary": b"", "c_tinyblob": b"", "c_blob": b"\x00",
        "c_mediumblob": b"", "c_longblob": b"",
        "c_inet4": "0.0.0.0", "c_inet6": "::ffff:192.0.2.1", "c_uuid": "00000000-0000-0000-0000-000000000001",
        "c_point": (0.0, 0.0),
    },
    3: {},  # every column NULL
    4: {
        "c_decimal": Decimal("-99999999999999999999999999999999999.999999999999999999999999999999"),
        "c_decimal2": Decimal("0"),
        "c_float": 0.0, "c_double": -2.2250738585072014e-308,
        "c_json": '{"k": "v"}', "c_year": 2155, "c_date": dt.date(9999, 12, 31),
        "c_datetime": D(9999, 12, 31, 23, 59, 59, 999999),
        "c_time": TD(hours=838, minutes=59, seconds=59),
        "c_timestamp": D(2038, 1, 19, 3, 14, 7, 999999),
        "c_datetime0": D(1000, 1, 1, 0, 0, 0),
        "c_char": "  x", "c_varchar": "   ", "c_binary": b"\x01",
        "c_enum": "blue", "c_set": "a,b,c,d", "c_bit64": 0x8000000000000000,
    },
    5: {
        "c_time": -TD(microseconds=1), "c_datetime": D(2024, 1, 1, 0, 0, 0, 500000),
        "c_timestamp": D(2024, 1, 1, 0, 0, 0, 0),
    },
}

# What reads return when it differs from what was written.
EXPECTED_OVERRIDES = {
    (1, "c_char"): "héllo",
    (2, "c_binary"): b"\xff\xff\xff\xff",
    (4, "c_binary"): b"\x01\x00\x00\x00",  # BINARY(n) pads with 0x00
    (4, "c_varchar"): "   ",               # VARCHAR keeps trailing spaces, CHAR drops them
    (1, "c_point"): point(1.5, -2.25),
    (2, "c_point"): point(0.0, 0.0),
}


def expected(row_id, col):
    if (row_id, col) in EXPECTED_OVERRIDES:
        return EXPECTED_OVERRIDES[(row_id, col)]
    return ROWS[row_id].get(col)


def _f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def norm(kind, v):
    """Canonical form of a value as drivers return it, per column kind."""
    if v is None:
        return None
    if isinstance(v, (bytearray, memoryview)):
        v = bytes(v)
    if kind == "int":
        return int(v)
    if kind == "decimal":
        return Decimal(v.decode() if isinstance(v, bytes) else str(v))
    if kind == "float":
        return round(_f32(float(v)), 5)  # FLOAT keeps ~6-7 significant digits
    if kind == "double":
        return float(v)
    if kind == "bit":
        return int.from_bytes(v, "big") if isinstance(v, bytes) else int(v)
    if kind == "set":
        if isinstance(v, (set, frozenset)):
            return frozenset(v)
        s = v.decode() if isinstance(v, bytes) else v
        return frozenset(x for x in s.split(",") if x)
    if kind == "json":
        return json.loads(v.decode() if isinstance(v, bytes) else v)
    if kind == "str":
        return v.decode("utf-8") if isinstance(v, bytes) else str(v)
    if kind == "bytes":
        return v if isinstance(v, bytes) else bytes(v, "utf-8") if isinstance(v, str) else v
    if kind == "geometry":
        return v.encode("utf-8") if isinstance(v, str) else bytes(v)
    if kind == "date":
        assert type(v) is dt.date, f"DATE came back as {type(v).__name__}: {v!r}"
        return v
    if kind == "datetime":
        assert isinstance(v, dt.datetime), f"DATETIME came back as {type(v).__name__}: {v!r}"
        return v
    if kind == "time":
        assert isinstance(v, dt.timedelta), f"TIME came back as {type(v).__name__}: {v!r}"
        return v
    raise AssertionError(f"unknown kind {kind}")


def expected_norm(row_id, col):
    return norm(KIND[col], expected(row_id, col))


# ---------------------------------------------------------------------------------------------
# Drivers

class Path:
    """One client path: how to connect, the placeholder, how to bind a value."""

    def __init__(self, name):
        self.name = name

    def connect(self, target):
        if self.name == "pymysql":
            conn = pymysql_connect(target)
        else:
            conn = connector_connect(target)
        query(conn, "SET time_zone = '+00:00'")
        return conn

    @property
    def prepared(self):
        return self.name == "connector_prepared"

    def cursor(self, conn):
        return conn.cursor(prepared=True) if self.prepared else conn.cursor()

    @property
    def ph(self):
        return "?" if self.prepared else "%s"

    def bind(self, col, value):
        if value is None:
            return None
        if col == "c_point":
            return "POINT(%r %r)" % value
        return value

    def insert_expr(self, col):
        if col == "c_point":
            return f"ST_GeomFromText({self.ph})"
        return self.ph


PATHS = ["pymysql", "connector_prepared", "connector_text"]


def table(path):
    return f"compat_py.types_{path}"


@pytest.fixture(scope="module", params=PATHS)
def written(request, compat_db):
    """Creates the table and writes every row through Tessera with this path."""
    path = Path(request.param)
    conn = path.connect(tessera())
    try:
        query(conn, f"DROP TABLE IF EXISTS {table(path.name)}")
        cols = ", ".join(f"{n} {ddl}" for n, ddl, _ in COLUMNS)
        query(conn, f"CREATE TABLE {table(path.name)} (id INT PRIMARY KEY, {cols}) "
                    "DEFAULT CHARSET=utf8mb4")
        sql = (f"INSERT INTO {table(path.name)} (id, {', '.join(NAMES)}) VALUES "
               f"({path.ph}, {', '.join(path.insert_expr(n) for n in NAMES)})")
        for row_id, row in ROWS.items():
            args = (row_id,) + tuple(path.bind(n, row.get(n)) for n in NAMES)
            cur = path.cursor(conn)
            cur.execute(sql, args)
            assert cur.rowcount == 1, f"row {row_id}: rowcount {cur.rowcount}"
            cur.close()
    finally:
        conn.close()
    return path


def read_rows(path, target, cols=None, tbl=None):
    cols = cols or NAMES
    tbl = tbl or table(path.name)
    conn = path.connect(target)
    try:
        cur = path.cursor(conn)
        cur.execute(f"SELECT id, {', '.join(cols)} FROM {tbl} ORDER BY id")
        rows = cur.fetchall()
        names = [d[0] for d in cur.description]
        cur.close()
        return names, rows
    finally:
        conn.close()


def compare(rows, cols, label):
    mismatches = []
    assert sorted(r[0] for r in rows) == sorted(ROWS), f"{label}: ids {[r[0] for r in rows]}"
    for r in rows:
        row_id = r[0]
        for col, got in zip(cols, r[1:]):
            want = expected_norm(row_id, col)
            try:
                have = norm(KIND[col], got)
            except Exception as e:  # noqa: BLE001 - report as a mismatch
                have = f"<{e}>"
            if have != want:
                short = lambda v: (repr(v)[:120] + "...") if len(repr(v)) > 120 else repr(v)  # noqa
                mismatches.append(f"row {row_id} {col}: got {short(got)} want {short(want)}")
    assert not mismatches, f"{label}: {len(mismatches)} mismatches:\n" + "\n".join(mismatches)


def test_round_trip_through_tessera(written):
    """Values written through Tessera come back unchanged through Tessera (same path)."""
    names, rows = read_rows(written, tessera())
    assert names == ["id"] + NAMES
    compare(rows, NAMES, f"{written.name} via tessera")


def test_stored_values_directly_on_mariadb(written):
    """What Tessera wrote is what MariaDB stored (read back directly, same driver)."""
    names, rows = read_rows(written, direct())
    compare(rows, NAMES, f"{written.name} written via tessera, read directly")


def test_one_megabyte_blob_byte_exact(written):
    conn = written.connect(tessera())
    try:
        cur = written.cursor(conn)
        cur.execute(f"SELECT c_longblob, LENGTH(c_longblob), SHA2(c_longblob, 256) "
                    f"FROM {table(written.name)} WHERE id = {written.ph}", (1,))
        blob, length, sha = cur.fetchone()
        cur.close()
    finally:
        conn.close()
    assert int(length) == len(MB_BLOB)
    if isinstance(sha, (bytes, bytearray)):
        sha = sha.decode()
    assert sha == hashlib.sha256(MB_BLOB).hexdigest()
    assert bytes(blob) == MB_BLOB


def test_text_and_binary_results_agree(written):
    """The same rows read with the text protocol and with the binary protocol are equal."""
    tbl = table(written.name)
    _, text_rows = read_rows(Path("connector_text"), tessera(), tbl=tbl)
    _, bin_rows = read_rows(Path("connector_prepared"), tessera(), tbl=tbl)
    assert len(text_rows) == len(bin_rows) == len(ROWS)
    for t_row, b_row in zip(text_rows, bin_rows):
        for col, tv, bv in zip(["id"] + NAMES, t_row, b_row):
            kind = KIND.get(col, "int")
            assert norm(kind, tv) == norm(kind, bv), f"row {t_row[0]} {col}: text {tv!r} binary {bv!r}"


def test_server_side_rendering_matches_direct(written):
    """HEX()/CAST rendering of every stored value is the same through Tessera and directly."""
    exprs = ", ".join(f"HEX({n})" if KIND[n] in ("bytes", "geometry", "bit") else
                      f"CAST({n} AS CHAR)" for n in NAMES if n != "c_longblob")
    sql = f"SELECT id, {exprs}, SHA2(c_longblob, 256) FROM {table(written.name)} ORDER BY id"
    results = []
    for target in (tessera(), direct()):
        conn = pymysql_connect(target, init_command="SET time_zone = '+00:00'")
        try:
            results.append(query(conn, sql))
        finally:
            conn.close()
    assert results[0] == results[1]


def test_null_row_is_all_null(written):
    names, rows = read_rows(written, tessera())
    (null_row,) = [r for r in rows if r[0] == 3]
    assert all(v is None for v in null_row[1:]), null_row


def test_long_data_parameter(compat_db):
    """COM_STMT_SEND_LONG_DATA: Connector/Python streams a file-like parameter in chunks."""
    conn = connector_connect(tessera())
    try:
        query(conn, "CREATE TABLE IF NOT EXISTS compat_py.long_data "
                    "(id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT) DEFAULT CHARSET=utf8mb4")
        query(conn, "DELETE FROM compat_py.long_data")
        cur = conn.cursor(prepared=True)
        text = (UNICODE * 20000)
        cur.execute("INSERT INTO compat_py.long_data VALUES (?, ?, ?)",
                    (1, io.BytesIO(MB_BLOB), io.BytesIO(text.encode("utf-8"))))
        assert cur.rowcount == 1
        cur.execute("SELECT LENGTH(b), SHA2(b, 256), t FROM compat_py.long_data WHERE id = ?", (1,))
        length, sha, t = cur.fetchone()
        cur.close()
    finally:
        conn.close()
    assert int(length) == len(MB_BLOB)
    sha = sha.decode() if isinstance(sha, (bytes, bytearray)) else sha
    assert sha == hashlib.sha256(MB_BLOB).hexdigest()
    assert (t.decode() if isinstance(t, (bytes, bytearray)) else t) == text


@pytest.mark.parametrize("path", ["pymysql", "connector_prepared"])
def test_literal_values_in_select(path):
    """Values computed by the server (no table): types and values in the result set."""
    p = Path(path)
    conn = p.connect(tessera())
    try:
        cur = p.cursor(conn)
        cur.execute("SELECT 18446744073709551615, -9223372036854775808, "
                    "CAST('12345678901234567890123456789012345.123456789012345678901234567890' "
                    "AS DECIMAL(65,30)), CAST('2024-02-29 23:59:59.123456' AS DATETIME(6)), "
                    "CAST('-12:00:00.5' AS TIME(6)), _utf8mb4 'héllo wörld 🚀', X'00FF00', NULL, "
                    "CAST(1e300 AS DOUBLE)")
        row = cur.fetchone()
        cur.close()
    finally:
        conn.close()
    assert int(row[0]) == 18446744073709551615
    assert int(row[1]) == -9223372036854775808
    assert norm("decimal", row[2]) == Decimal(
        "12345678901234567890123456789012345.123456789012345678901234567890")
    assert row[3] == D(2024, 2, 29, 23, 59, 59, 123456)
    assert row[4] == -TD(hours=12, microseconds=500000)
    assert norm("str", row[5]) == UNICODE
    assert norm("bytes", row[6]) == b"\x00\xff\x00"
    assert row[7] is None
    assert float(row[8]) == 1e300
