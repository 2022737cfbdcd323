"""Transactions through Tessera (pool2 environment, --pool-max 2, with other clients running):
commit is visible, rollback is not, autocommit=0 keeps a transaction open across statements,
and a client that disconnects inside a transaction leaves nothing behind."""

import threading
import time

import pytest

from conftest import connector_connect, pymysql_connect, query, scalar, tessera

T = "compat_py.tx"


@pytest.fixture(scope="module")
def env(compat_db):
    target = tessera("pool2")
    conn = pymysql_connect(target)
    query(conn, "CREATE DATABASE IF NOT EXISTS compat_py")
    query(conn, f"DROP TABLE IF EXISTS {T}")
    query(conn, f"CREATE TABLE {T} (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
    conn.close()
    return target


@pytest.fixture
def noise(env):
    """Three other clients running short statements (and transactions) on the same Tessera."""
    stop = threading.Event()
    errors = []

    def run(n):
        try:
            c = pymysql_connect(env)
            i = 0
            while not stop.is_set():
                i += 1
                assert scalar(c, "SELECT %s", (i,)) == i
                if i % 5 == 0:
                    c.begin()
                    query(c, "SELECT COUNT(*) FROM compat_py.tx")
                    c.rollback()
                time.sleep(0.001)
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(3)]
    for t in threads:
        t.start()
    yield
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors


def ids(conn):
    return [r[0] for r in query(conn, f"SELECT id FROM {T} ORDER BY id")]


def test_commit_visible(env, noise):
    a, b = pymysql_connect(env), pymysql_connect(env)
    try:
        b.begin()
        query(b, f"INSERT INTO {T} VALUES (1, 'committed')")
        assert 1 in ids(b)
        assert 1 not in ids(a), "uncommitted row visible to another client"
        b.commit()
        assert 1 in ids(a)
        assert scalar(a, f"SELECT v FROM {T} WHERE id = 1") == "committed"
    finally:
        a.close()
        b.close()


def test_rollback_not_visible(env, noise):
    a, b = pymysql_connect(env), pymysql_connect(env)
    try:
        query(b, "START TRANSACTION")
        query(b, f"INSERT INTO {T} VALUES (2, 'rolled back')")
        query(b, f"UPDATE {T} SET v = 'changed' WHERE id = 1")
        assert scalar(b, f"SELECT v FROM {T} WHERE id = 1") == "changed"
        assert scalar(b, "SELECT @@in_transaction") == 1
        query(b, "ROLLBACK")
        assert scalar(b, "SELECT @@in_transaction") == 0
        for c in (a, b):
            assert 2 not in ids(c)
            assert scalar(c, f"SELECT v FROM {T} WHERE id = 1") == "committed"
    finally:
        a.close()
        b.close()


def test_autocommit_off(env, noise):
    a, b = pymysql_connect(env), pymysql_connect(env)
    try:
        b.autocommit(False)
        assert scalar(b, "SELECT @@autocommit") == 0
        query(b, f"INSERT INTO {T} VALUES (3, 'ac0')")
        assert scalar(b, "SELECT @@in_transaction") == 1
        # Other statements from other clients; b's transaction must stay open and private.
        for _ in range(20):
            assert 3 not in ids(a)
        assert 3 in ids(b)
        b.commit()
        assert 3 in ids(a)
        # Still autocommit=0: the next statement opens a new transaction.
        assert scalar(b, "SELECT @@autocommit") == 0
        query(b, f"INSERT INTO {T} VALUES (4, 'ac0 rb')")
        assert 4 not in ids(a)
        b.rollback()
        assert 4 not in ids(a) and 4 not in ids(b)
        b.autocommit(True)
        query(b, f"INSERT INTO {T} VALUES (5, 'ac1')")
        assert 5 in ids(a), "autocommit=1 insert not visible"
    finally:
        a.close()
        b.close()


def test_autocommit_off_connector_status_flags(env, noise):
    """Connector/Python reads SERVER_STATUS_IN_TRANS / AUTOCOMMIT from OK packets."""
    a = pymysql_connect(env)
    b = connector_connect(env, autocommit=False)
    try:
        assert b.autocommit is False
        cur = b.cursor()
        cur.execute(f"INSERT INTO {T} VALUES (6, 'connector')")
        assert b.in_transaction is True
        assert 6 not in ids(a)
        b.commit()
        assert b.in_transaction is False
        assert 6 in ids(a)
        cur.execute(f"DELETE FROM {T} WHERE id = 6")
        assert b.in_transaction is True
        b.rollback()
        assert 6 in ids(a)
        cur.close()
    finally:
        a.close()
        b.close()


def test_disconnect_inside_transaction_rolls_back(env, noise):
    a = pymysql_connect(env)
    try:
        for i in range(3):
            b = pymysql_connect(env)
            b.autocommit(False)
            query(b, f"INSERT INTO {T} VALUES ({100 + i}, 'abandoned')")
            b.close()  # no COMMIT
            time.sleep(0.05)
        # The abandoned transactions must not be committed later by someone else.
        c = pymysql_connect(env)
        query(c, "COMMIT")
        assert scalar(c, "SELECT @@autocommit") == 1
        assert scalar(c, "SELECT @@in_transaction") == 0
        c.close()
        assert [i for i in ids(a) if i >= 100] == []
    finally:
        a.close()


def test_transaction_isolation_and_read_only(env, noise):
    b = pymysql_connect(env)
    try:
        query(b, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        for _ in range(5):
            assert scalar(b, "SELECT @@tx_isolation") == "READ-COMMITTED"
        query(b, "START TRANSACTION READ ONLY")
        with pytest.raises(Exception) as info:
            query(b, f"INSERT INTO {T} VALUES (7, 'ro')")
        assert info.value.args[0] == 1792  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
        query(b, "COMMIT")
    finally:
        b.close()
