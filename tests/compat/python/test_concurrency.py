"""The concurrency check: 20 clients through a Tessera with --pool-max 2 (environment pool2),
each with its own @v, time_zone and (in one variant) TEMPORARY TABLE t, interleaving 50 rounds
of reads that must only ever see their own values. A monitor counts Tessera's backend
connections on MariaDB (information_schema.PROCESSLIST, USER='tessera') meanwhile.

* replayed state only (@v + time_zone): nothing pins, so the backend connections stay <= 2;
* with a temporary table: each session is pinned to its own backend connection (pinned
  connections are counted apart from pool.max_size): the maximum is reported.
Afterwards no state may leak to new sessions.
"""

import threading
import time

import pymysql
import pytest

from conftest import direct, pymysql_connect, query, scalar, tessera, tessera_only

pytestmark = tessera_only  # counts Tessera's backend connections

ENV = "pool2"
POOL_MAX = 2
CLIENTS = 20
ROUNDS = 50
MAXIMA = {}


def time_zone_of(i):
    """Distinct offsets: -09:30, -08:45, ... (45 minutes apart)."""
    minutes = -570 + 45 * i
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


class Monitor(threading.Thread):
    """Polls MariaDB for the number of connections of Tessera's backend user."""

    SQL = ("SELECT ID, COMMAND, TIME_MS, STATE FROM information_schema.PROCESSLIST "
           "WHERE USER = 'tessera' AND ID <> CONNECTION_ID() ORDER BY ID")

    def __init__(self, exclude=()):
        super().__init__(daemon=True)
        self.conn = pymysql_connect(direct(ENV))
        # Direct connections the test itself holds are not Tessera's.
        self.sql = self.SQL.replace("ORDER BY", "".join(f"AND ID <> {int(i)} " for i in exclude) + "ORDER BY")
        self.stop = threading.Event()
        self.samples = []
        self.busiest = []

    def sample(self):
        rows = query(self.conn, self.sql)
        if len(rows) > len(self.busiest):
            self.busiest = rows
        return len(rows)

    def run(self):
        while not self.stop.is_set():
            self.samples.append(self.sample())
            time.sleep(0.005)

    def finish(self):
        self.stop.set()
        self.join(10)
        self.samples.append(self.sample())
        self.conn.close()
        return max(self.samples)


def run_clients(with_temp_table):
    target = tessera(ENV)
    setup = pymysql_connect(target)
    query(setup, "CREATE DATABASE IF NOT EXISTS compat_py")
    setup.close()
    barrier = threading.Barrier(CLIENTS)
    errors = []
    seen = []

    def client(i):
        conn = None
        try:
            # No default database: a login with one makes Tessera replace a backend connection
            # (test_login_with_database_reuses_the_pool covers that separately).
            conn = pymysql_connect(target)
            value = f"client-{i:02d}"
            tz = time_zone_of(i)
            query(conn, "SET @v = %s", (value,))
            query(conn, f"SET time_zone = '{tz}'")
            check = "SELECT @v, @@time_zone"
            want = (value, tz)
            if with_temp_table:
                query(conn, "CREATE TEMPORARY TABLE compat_py.t (x VARCHAR(20))")
                query(conn, "INSERT INTO compat_py.t VALUES (%s)", (f"row-of-{i:02d}",))
                check = "SELECT @v, @@time_zone, (SELECT x FROM compat_py.t)"
                want = (value, tz, f"row-of-{i:02d}")
            for r in range(ROUNDS):
                barrier.wait(60)
                got = query(conn, check)
                if got != [want]:
                    errors.append(f"client {i} round {r}: got {got} want {want}")
            seen.append(i)
            if with_temp_table:
                query(conn, "DROP TEMPORARY TABLE compat_py.t")
        except threading.BrokenBarrierError:
            errors.append(f"client {i}: barrier broken")
        except Exception as e:  # noqa: BLE001
            errors.append(f"client {i}: {e!r}")
            barrier.abort()
        finally:
            if conn is not None:
                conn.close()

    monitor = Monitor()
    before = monitor.sample()
    monitor.start()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    elapsed = time.monotonic() - t0
    peak = monitor.finish()
    if not with_temp_table and peak > POOL_MAX:
        print(f"\n[concurrency] busiest PROCESSLIST sample (id, command, ms, state): "
              f"{monitor.busiest}")
    return errors, peak, before, elapsed, sorted(seen)


def report(name, peak, before, elapsed):
    MAXIMA[name] = peak
    print(f"\n[concurrency] {name}: max backend connections of Tessera seen on MariaDB = {peak} "
          f"(before: {before}; {CLIENTS} clients x {ROUNDS} rounds in {elapsed:.1f}s)")


def test_replayed_state_only_stays_within_pool_max(compat_db):
    """@v + time_zone only: every client sees its own values and Tessera never uses more than
    pool.max_size = 2 backend connections."""
    errors, peak, before, elapsed, seen = run_clients(with_temp_table=False)
    report("@v + time_zone (no temp table)", peak, before, elapsed)
    assert not errors, "\n".join(errors[:20])
    assert seen == list(range(CLIENTS))
    assert peak <= POOL_MAX, f"{peak} backend connections for --pool-max {POOL_MAX}"


def test_temporary_tables_pin_each_session(compat_db):
    """@v + time_zone + TEMPORARY TABLE t: every client sees its own t."""
    errors, peak, before, elapsed, seen = run_clients(with_temp_table=True)
    report("@v + time_zone + temporary table", peak, before, elapsed)
    assert not errors, "\n".join(errors[:20])
    assert seen == list(range(CLIENTS))


def check_fresh_session(c):
    assert scalar(c, "SELECT @v") is None
    assert scalar(c, "SELECT @@time_zone") == "SYSTEM"
    with pytest.raises(pymysql.err.ProgrammingError) as info:
        query(c, "SELECT x FROM compat_py.t")
    assert info.value.args[0] == 1146


def test_nothing_leaks_to_new_sessions(compat_db):
    """After the clients above are gone, fresh sessions see none of their state."""
    target = tessera(ENV)
    holder = pymysql_connect(target)
    other = pymysql_connect(target)
    try:
        query(holder, "BEGIN")  # holds one backend connection: `other` runs on another one
        check_fresh_session(holder)
        check_fresh_session(other)
        query(holder, "COMMIT")
    finally:
        holder.close()
        other.close()
    for _ in range(10):
        c = pymysql_connect(target)
        try:
            check_fresh_session(c)
        finally:
            c.close()


def test_backend_connections_settle_back(compat_db):
    """Once the pinned sessions are gone, Tessera keeps at most pool.max_size connections."""
    monitor = Monitor()
    deadline = time.monotonic() + 15
    count = monitor.sample()
    while count > POOL_MAX and time.monotonic() < deadline:
        time.sleep(0.5)
        count = monitor.sample()
    monitor.conn.close()
    print(f"\n[concurrency] backend connections after the clients left: {count}")
    assert count <= POOL_MAX


def test_login_with_database_reuses_the_pool(compat_db):
    """20 clients log in with a default database (what most applications do) and run a query:
    Tessera reuses its pool (no new backend connections beyond pool.max_size) and never has
    more than pool.max_size of them."""
    target = tessera(ENV)
    status = pymysql_connect(direct(ENV))
    warm = [pymysql_connect(target, database="compat_py") for _ in range(POOL_MAX)]
    for w in warm:
        query(w, "BEGIN")  # both pool connections get used (and get the default database)
    for w in warm:
        query(w, "COMMIT")
        w.close()
    connects_before = int(query(status, "SHOW GLOBAL STATUS LIKE 'Connections'")[0][1])
    monitor = Monitor(exclude=[scalar(status, "SELECT CONNECTION_ID()")])
    monitor.start()
    errors = []

    def client(i):
        try:
            conn = pymysql_connect(target, database="compat_py")
            assert scalar(conn, "SELECT DATABASE()") == "compat_py"
            conn.close()
        except Exception as e:  # noqa: BLE001
            errors.append(f"client {i}: {e!r}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    peak = monitor.finish()
    # minus the monitor's own connection
    opened = int(query(status, "SHOW GLOBAL STATUS LIKE 'Connections'")[0][1]) - connects_before - 1
    status.close()
    MAXIMA["logins with a default database"] = peak
    print(f"\n[concurrency] {CLIENTS} logins with a default database: max backend connections "
          f"{peak}, new backend connections opened {opened}")
    assert not errors, "\n".join(errors)
    assert peak <= POOL_MAX, f"{peak} backend connections for --pool-max {POOL_MAX}"
    assert opened <= POOL_MAX, f"{opened} new backend connections for {CLIENTS} logins"


def test_print_maxima():
    print("\n[concurrency] maxima: " + ", ".join(f"{k}: {v}" for k, v in MAXIMA.items()))
