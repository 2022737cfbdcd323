"""Prepared statements stay bounded on the backend (environment ps: --pool-max 4
--prepared-cache 64): clients prepare, execute once and close 10,000 distinct statements
(real COM_STMT_PREPARE / EXECUTE / CLOSE from Connector/Python prepared cursors); MariaDB's
Prepared_stmt_count must never exceed 4 * 64 = 256."""

import threading
import time

from conftest import (connector_connect, direct, pymysql_connect, scalar, tessera,
                      tessera_only)

pytestmark = tessera_only  # counts Tessera's backend connections

ENV = "ps"
POOL_MAX = 4
CACHE = 64
TOTAL = 10_000
CLIENTS = 4


def global_status(conn, name):
    cur = conn.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    (_, value), = cur.fetchall()
    cur.close()
    return int(value)


class StmtMonitor(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.conn = pymysql_connect(direct(ENV))
        self.stop = threading.Event()
        self.peak = 0

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, global_status(self.conn, "Prepared_stmt_count"))
            time.sleep(0.02)

    def finish(self):
        self.stop.set()
        self.join(10)
        self.conn.close()
        return self.peak


def test_prepared_statements_bounded_on_backend():
    target = tessera(ENV)
    status = pymysql_connect(direct(ENV))
    prepares_before = global_status(status, "Com_stmt_prepare")
    closes_before = global_status(status, "Com_stmt_close")
    errors = []
    done = []
    per_client = TOTAL // CLIENTS

    def client(c):
        try:
            conn = connector_connect(target)
            cur = conn.cursor(prepared=True)
            for k in range(per_client):
                i = c * per_client + k
                # A new statement text each time: the cursor closes the previous statement
                # (COM_STMT_CLOSE), prepares this one (COM_STMT_PREPARE) and executes it.
                cur.execute(f"SELECT ? + {i}", (k,))
                row = cur.fetchone()
                if int(row[0]) != k + i:
                    errors.append(f"client {c}: SELECT {k} + {i} gave {row[0]}")
                    break
            cur.close()
            conn.close()
            done.append(c)
        except Exception as e:  # noqa: BLE001
            errors.append(f"client {c}: {e!r}")

    monitor = StmtMonitor()
    monitor.start()
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    elapsed = time.monotonic() - t0
    peak = monitor.finish()
    after = global_status(status, "Prepared_stmt_count")
    prepares = global_status(status, "Com_stmt_prepare") - prepares_before
    closes = global_status(status, "Com_stmt_close") - closes_before
    status.close()
    print(f"\n[prepared] {TOTAL} distinct statements prepared/executed/closed by {CLIENTS} "
          f"clients in {elapsed:.1f}s; MariaDB Prepared_stmt_count after = {after}, "
          f"max seen while running = {peak} (bound {POOL_MAX} x {CACHE} = {POOL_MAX * CACHE}); "
          f"backend COM_STMT_PREPARE {prepares}, COM_STMT_CLOSE {closes}")
    assert not errors, "\n".join(errors[:10])
    assert sorted(done) == list(range(CLIENTS))
    assert after <= POOL_MAX * CACHE
    assert peak <= POOL_MAX * CACHE


def test_prepared_statement_reuse_after_eviction():
    """A statement whose backend copy was evicted from Tessera's cache still executes."""
    conn = connector_connect(tessera(ENV))
    try:
        keep = conn.cursor(prepared=True)
        sql = "SELECT ? * 2"
        keep.execute(sql, (1,))
        assert keep.fetchone()[0] == 2
        churn = conn.cursor(prepared=True)
        for i in range(CACHE * 3):  # more distinct statements than the cache holds
            churn.execute(f"SELECT ? - {i}", (i,))
            assert churn.fetchone()[0] == 0
        churn.close()
        for v in (5, 21, -4):
            keep.execute(sql, (v,))  # same statement object: no new prepare, only EXECUTE
            assert keep.fetchone()[0] == 2 * v
        keep.close()
        assert scalar(conn, "SELECT 1") == 1
    finally:
        conn.close()
