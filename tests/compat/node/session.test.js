'use strict';
// Session checks for mysql2 (tests/compat common checks 1-8):
//   session state (SET NAMES ... COLLATE, SET CHARACTER SET, character_set_results = NULL,
//   collation_connection, time_zone, sql_mode, @x, TEMPORARY table, GET_LOCK) survives ten other
//   statements; SHOW WARNINGS & co. describe the previous statement, also after a failed one;
//   USER() / CURRENT_USER() / CONNECTION_ID() (= the handshake's threadId); changeUser();
//   KILL QUERY / KILL CONNECTION from another connection (query() and execute(); createConnection
//   and createPool; COMPAT_FILTER=kill runs only these); LOAD DATA LOCAL INFILE with
//   infileStreamFactory; SET session_track_*; read-after-write (two connections and createPool).
// Values are read with query() (text protocol) and execute() (a fresh server-side prepare:
// the statement is unprepared after each use, so that a literal's collation is the one of the
// moment, as with go-sql-driver). Every statement is bounded (support.js `bounded`): a hang is a
// failure naming the statement. Expectations are MariaDB's own answers (run.sh --direct).

const { test, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { mysql, DB, user, password, connect, createDatabase, connectServer, serverPorts, bounded, baseOpts } = require('./support.js');

const user2 = process.env.TESSERA_USER2 || 'app2';
const password2 = process.env.TESSERA_PASSWORD2 || 'app2';
const TEST_MS = { timeout: 120000 }; // outer guard of each test (statements are bounded at 15 s)

const cell = (v) => (v === null ? 'NULL' : Buffer.isBuffer(v) ? v.toString() : String(v));

// One connection; every statement bounded, values as text ('NULL' for NULL).
class Session {
  constructor(conn, name) {
    this.c = conn;
    this.name = name;
    this.errors = []; // 'error' events (e.g. the server closed an idle, killed connection)
    conn.on('error', (e) => this.errors.push(e));
  }

  static async open(name, extra = {}) {
    return new Session(await bounded(connect(extra), `${name}: connect`), name);
  }

  // kind 'query' = text protocol, 'execute' = server-side prepared (unprepared afterwards).
  async run(sql, params = [], kind = 'query') {
    const what = `${this.name}: ${kind}(${JSON.stringify(sql)}${params.length ? `, ${JSON.stringify(params)}` : ''})`;
    const p = kind === 'execute' ? this.c.execute(sql, params) : this.c.query(sql, params);
    const [rows] = await bounded(p, what, () => this.c.destroy()).catch((e) => {
      if (e.message.startsWith(what)) throw e;
      throw Object.assign(new Error(`${what}: ${e.message}`), { errno: e.errno, code: e.code });
    });
    if (kind === 'execute') this.c.connection.unprepare(sql);
    return rows;
  }

  // The only row of sql, its values tab-joined.
  async row(sql, params = [], kind = 'query') {
    const rows = await this.run(sql, params, kind);
    assert.equal(rows.length, 1, `${this.name}: ${kind}(${sql}): row count`);
    return Object.values(rows[0]).map(cell).join('\t');
  }

  // sql answers want, read with each of kinds.
  async expect(want, sql, params = [], kinds = ['query', 'execute']) {
    for (const kind of kinds) {
      assert.equal(await this.row(sql, params, kind), want, `${this.name}: ${kind}(${JSON.stringify(sql)}, ${JSON.stringify(params)})`);
    }
  }

  async expectError(sql, errno, kind = 'query') {
    let err = null;
    try {
      await this.run(sql, [], kind);
    } catch (e) {
      err = e;
    }
    assert.equal(err && err.errno, errno, `${this.name}: ${sql}: want error ${errno}, got ${err && err.message}`);
  }

  end() {
    return bounded(this.c.end(), `${this.name}: end`, () => this.c.destroy()).catch(() => this.c.destroy());
  }
}

// Opens sessions for fn, closes them afterwards.
async function withSessions(names, fn, extra = {}) {
  const sessions = [];
  try {
    for (const n of names) sessions.push(await Session.open(n, extra));
    return await fn(...sessions);
  } finally {
    await Promise.all(sessions.map((s) => s.end()));
  }
}

before(createDatabase);

// ---------------------------------------------------------------------------------
// 1. Session state kept across statements
// ---------------------------------------------------------------------------------

// Ten statements, text and prepared, with a write and a committed transaction.
async function churn(s) {
  await s.run('CREATE TABLE IF NOT EXISTS node_churn (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB');
  await s.run("INSERT INTO node_churn (v) VALUES ('text')");
  await s.run('INSERT INTO node_churn (v) VALUES (?)', ['prepared'], 'execute');
  await s.run('BEGIN');
  await s.run("UPDATE node_churn SET v = 'updated' WHERE id = LAST_INSERT_ID()");
  await s.run('INSERT INTO node_churn (v) VALUES (?)', ['in transaction'], 'execute');
  await s.run('COMMIT');
  await s.row('SELECT COUNT(*) FROM node_churn WHERE id <= LAST_INSERT_ID()');
  await s.row('SELECT name FROM demo.customers WHERE id = ?', [2], 'execute');
  await s.row('SELECT SUM(amount) FROM demo.orders');
}

test('session state kept across statements', TEST_MS, async (t) => {
  await withSessions(['session A', 'session B'], async (s, other) => {
    await t.test('SET NAMES utf8mb4 COLLATE utf8mb4_bin kept', async () => {
      await s.run('SET NAMES utf8mb4 COLLATE utf8mb4_bin');
      await churn(s);
      await s.expect('utf8mb4_bin\t0', "SELECT @@collation_connection, 'a' = 'A'");
      await s.expect('utf8mb4_bin\t0', "SELECT @@collation_connection, 'a' = ?", ['A']);
    });
    await t.test('SET NAMES utf8mb4 back to utf8mb4_general_ci', async () => {
      await s.run('SET NAMES utf8mb4');
      await churn(s);
      await s.expect('utf8mb4_general_ci\t1', "SELECT @@collation_connection, 'a' = 'A'");
      await s.expect('utf8mb4_general_ci\t1', "SELECT @@collation_connection, 'a' = ?", ['A']);
    });
    await t.test('SET CHARACTER SET latin1 kept', async () => {
      await s.run('SET CHARACTER SET latin1');
      await churn(s);
      const dbCharset = await s.row('SELECT @@character_set_database');
      await s.expect(`latin1\tlatin1\t${dbCharset}`, 'SELECT @@character_set_client, @@character_set_results, @@character_set_connection');
      await s.run('SET NAMES utf8mb4');
    });
    await t.test('SET character_set_results = NULL kept', async () => {
      await s.run('SET character_set_results = NULL');
      await churn(s);
      await s.expect('NULL\tutf8mb4', 'SELECT @@character_set_results, @@character_set_client');
      await s.run('SET NAMES utf8mb4');
    });
    await t.test('SET collation_connection = utf8mb4_unicode_ci kept', async () => {
      await s.run('SET collation_connection = utf8mb4_unicode_ci');
      await churn(s);
      await s.expect('utf8mb4_unicode_ci\tutf8mb4', 'SELECT @@collation_connection, @@character_set_connection');
      await s.run('SET NAMES utf8mb4');
    });
    await t.test('time_zone, sql_mode, user variable, TEMPORARY table, GET_LOCK kept', async () => {
      await s.run("SET time_zone = '+05:30'");
      await s.run("SET sql_mode = 'ANSI_QUOTES'");
      await s.run('SET @x = 42');
      await s.run('CREATE TEMPORARY TABLE node_tmp (id INT PRIMARY KEY, v VARCHAR(10))');
      await s.run("INSERT INTO node_tmp VALUES (1, 'one')");
      await s.expect('1', "SELECT GET_LOCK('compat_node_lock', 0)", [], ['query']);
      await churn(s);
      await s.run('INSERT INTO node_tmp VALUES (?, ?)', [2, 'two'], 'execute');
      await churn(s);
      await s.expect('+05:30', 'SELECT @@time_zone');
      await s.expect('05:30', "SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i')");
      await s.expect('ANSI_QUOTES', 'SELECT @@sql_mode');
      // With ANSI_QUOTES "x" names the column (7); without it, it is the string 'x'.
      await s.expect('7', 'SELECT "x" FROM (SELECT 7 AS x) AS t');
      await s.expect('42', 'SELECT @x');
      await s.expect('2\tone,two', 'SELECT COUNT(*), GROUP_CONCAT(v ORDER BY id) FROM node_tmp');
      assert.equal(await other.row("SELECT IS_USED_LOCK('compat_node_lock') IS NOT NULL"), '1',
        "IS_USED_LOCK('compat_node_lock') from another connection is NULL: session A's lock is gone");
      await s.expect('1', "SELECT RELEASE_LOCK('compat_node_lock')", [], ['query']);
    });
  });
});

// ---------------------------------------------------------------------------------
// 2. Warnings / diagnostics area of the previous statement
// ---------------------------------------------------------------------------------

const CAST_WARNING = "Warning\t1292\tTruncated incorrect INTEGER value: 'abc'";

// SHOW WARNINGS lists want (entries "Level\tCode[\tMessage]", matched as prefixes).
async function expectWarnings(s, after, ...want) {
  const got = (await s.run('SHOW WARNINGS')).map((r) => `${r.Level}\t${r.Code}\t${r.Message}`);
  const ok = got.length === want.length && got.every((g, i) => g === want[i] || g.startsWith(`${want[i]}\t`));
  assert.ok(ok, `${s.name}: SHOW WARNINGS after ${after} = ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

test('warnings: the diagnostics area is that of the previous statement', TEST_MS, async (t) => {
  await withSessions(['session'], async (s) => {
    const cast = () => s.expect('0', "SELECT CAST('abc' AS SIGNED)", [], ['query']);
    await t.test("SHOW WARNINGS after SELECT CAST('abc' AS SIGNED): one 1292", async () => {
      await cast();
      await expectWarnings(s, 'SELECT CAST', CAST_WARNING);
    });
    await t.test('@@warning_count, SHOW COUNT(*) WARNINGS, GET DIAGNOSTICS = 1', async () => {
      await cast();
      await s.expect('1', 'SELECT @@warning_count', [], ['query']);
      await cast();
      await s.expect('1', 'SHOW COUNT(*) WARNINGS', [], ['query']);
      await cast();
      await s.run('GET DIAGNOSTICS @n = NUMBER');
      await s.expect('1', 'SELECT @n', [], ['query']);
    });
    await t.test('SHOW WARNINGS after execute("SELECT CAST(? AS SIGNED)")', async () => {
      await s.expect('0', 'SELECT CAST(? AS SIGNED)', ['abc'], ['execute']);
      await expectWarnings(s, 'prepared SELECT CAST', CAST_WARNING);
      await s.expect('0', 'SELECT CAST(? AS SIGNED)', ['abc'], ['execute']);
      await s.expect('1', 'SELECT @@warning_count', [], ['execute']);
    });
    await t.test('SHOW WARNINGS after a failed USE / missing table: that error', async () => {
      await s.expectError('USE no_such_db_xyz', 1049);
      await expectWarnings(s, 'USE no_such_db_xyz', "Error\t1049\tUnknown database 'no_such_db_xyz'");
      await s.expectError('SELECT * FROM no_such_table_xyz', 1146);
      await expectWarnings(s, 'SELECT from a missing table', 'Error\t1146');
      await s.expectError('SELECT * FROM no_such_table_xyz', 1146, 'execute');
      await expectWarnings(s, 'execute() of a SELECT from a missing table', 'Error\t1146');
    });
    await t.test('failed USE then SELECT CAST: SHOW WARNINGS lists only the 1292', async () => {
      await s.expectError('USE no_such_db_xyz', 1049);
      await cast();
      await expectWarnings(s, 'USE no_such_db_xyz; SELECT CAST', CAST_WARNING);
    });
    await t.test('a statement without warnings clears them; SELECT 1 keeps them (as MariaDB does)', async () => {
      await cast();
      await s.row('SELECT COUNT(*) FROM demo.customers');
      await expectWarnings(s, 'SELECT COUNT(*) FROM demo.customers');
      await cast();
      await s.row('SELECT COUNT(*) FROM demo.customers');
      await s.expect('0', 'SELECT @@warning_count', [], ['query']);
      // MariaDB 10.11 keeps the diagnostics area for a statement that uses no table.
      await cast();
      await s.row('SELECT 1');
      await expectWarnings(s, 'SELECT CAST; SELECT 1', CAST_WARNING);
    });
  });
});

// ---------------------------------------------------------------------------------
// 3. Identity, 4. CHANGE USER
// ---------------------------------------------------------------------------------

test('identity: USER(), CURRENT_USER(), CONNECTION_ID()', TEST_MS, async (t) => {
  await withSessions(['session A', 'session B'], async (a, b) => {
    await t.test('USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER', async () => {
      const login = `${user}@127.0.0.1`;
      await a.expect(`${login}\t${login}\t${login}`, 'SELECT USER(), SESSION_USER(), SYSTEM_USER()');
      await a.expect(`${user}@%\t${user}@%`, 'SELECT CURRENT_USER(), CURRENT_USER');
    });
    await t.test('CONNECTION_ID() stable over ten statements, distinct across connections', async () => {
      const first = await a.row('SELECT CONNECTION_ID()');
      for (let i = 0; i < 10; i++) {
        if (i % 3 === 0) await a.run('DO ?', [i], 'execute');
        assert.equal(await a.row('SELECT CONNECTION_ID()', [], i % 2 ? 'execute' : 'query'), first, `statement ${i}`);
      }
      assert.notEqual(await b.row('SELECT CONNECTION_ID()'), first, 'two connections share CONNECTION_ID()');
    });
    await t.test("the handshake's connection id (threadId) = CONNECTION_ID()", async () => {
      assert.equal(String(a.c.threadId), await a.row('SELECT CONNECTION_ID()'));
    });
  });
});

test('CHANGE USER: changeUser() to the second account and back', TEST_MS, async () => {
  await withSessions(['session'], async (s) => {
    await s.run('SET @u = 1');
    await bounded(s.c.changeUser({ user: user2, password: password2 }), `changeUser(${user2})`, () => s.c.destroy());
    await s.expect(`${user2}@%\t${user2}@127.0.0.1`, 'SELECT CURRENT_USER(), USER()');
    await s.expect('NULL', 'SELECT @u');
    await s.expect(DB, 'SELECT DATABASE()');
    await s.run('SET @u = 2');
    await bounded(s.c.changeUser({ user, password }), `changeUser(${user})`, () => s.c.destroy());
    await s.expect(`${user}@%\t${user}@127.0.0.1\tNULL`, 'SELECT CURRENT_USER(), USER(), @u');
  });
});

// ---------------------------------------------------------------------------------
// 5. KILL [QUERY] from another connection
// ---------------------------------------------------------------------------------

// Polls the process list of every server until a statement containing marker runs (10 s at
// most). SHOW FULL PROCESSLIST, not information_schema.PROCESSLIST: the latter materializes an
// Aria temporary table in tmpdir (/tmp), where another sandbox MariaDB starting up deletes it
// and this server then crashes freeing it.
async function waitRunning(marker) {
  const servers = await Promise.all(serverPorts().map((p) => bounded(connectServer(p), `connect to server ${p}`)));
  try {
    const deadline = Date.now() + 10000;
    for (;;) {
      for (const srv of servers) {
        const [rows] = await bounded(srv.query('SHOW FULL PROCESSLIST'), 'SHOW FULL PROCESSLIST', () => srv.destroy());
        if (rows.some((r) => String(r.Info).includes(marker))) return;
      }
      if (Date.now() > deadline) throw new Error(`no statement with ${marker} in the process list of ports ${serverPorts()} after 10 s`);
      await new Promise((r) => setTimeout(r, 20)); // poll interval
    }
  } finally {
    await Promise.all(servers.map((srv) => srv.end().catch(() => srv.destroy())));
  }
}

async function expectKillError(s, sql, param, kind) {
  let err = null;
  try {
    await s.run(sql, [param], kind);
  } catch (e) {
    err = e;
  }
  assert.equal(err && err.errno, 1094, `${sql} with ${param}: want error 1094, got ${err && err.message}`);
}

for (const kind of ['query', 'execute']) {
  test(`KILL from another connection, ${kind}()`, TEST_MS, async (t) => {
    await withSessions(['killer B', 'victim A'], async (b, a) => {
      const n = await a.row('SELECT CONNECTION_ID()');
      await t.test('KILL QUERY of a running SELECT SLEEP(5)', async () => {
        const marker = `node-kill-query-${kind}-${Date.now()}`;
        const t0 = Date.now();
        const sleeping = a.run(`SELECT SLEEP(?) AS s /* ${marker} */`, [5], kind).then(
          (rows) => ({ value: cell(rows[0].s), ms: Date.now() - t0 }),
          (err) => ({ err, ms: Date.now() - t0 }));
        let problem = null;
        try {
          await waitRunning(marker);
          await b.run('KILL QUERY ?', [Number(n)], kind);
        } catch (e) {
          problem = e;
        }
        const r = await bounded(sleeping, 'A: SELECT SLEEP(5) after KILL QUERY', () => a.c.destroy(), 30000);
        if (problem) throw problem;
        const interrupted = (r.err && r.err.errno === 1317) || r.value === '1';
        assert.ok(interrupted && r.ms < 4000,
          `A: SELECT SLEEP(5) answered ${r.err ? r.err.message : r.value} after ${r.ms} ms; want error 1317 or 1, well before 5 s`);
        await a.expect('1', 'SELECT 1');
        await a.expect(n, 'SELECT CONNECTION_ID()');
      });
      await t.test('KILL CONNECTION: the killed connection fails, a new one works', async () => {
        await b.run('KILL ?', [Number(n)], kind);
        let err = null;
        try {
          await a.run('SELECT 1');
        } catch (e) {
          err = e;
        }
        assert.ok(err, `A: statement after KILL ${n} succeeded, want a connection error`);
        assert.doesNotMatch(err.message, /hang/, 'A: statement after KILL');
        await withSessions(['new connection'], (c) => c.expect('1', 'SELECT 1'));
      });
      await t.test('KILL QUERY of an idle connection: OK, connection usable', async () => {
        await withSessions(['idle C'], async (c) => {
          const id = await c.row('SELECT CONNECTION_ID()');
          await b.run('KILL QUERY ?', [Number(id)], kind);
          await c.expect('1', 'SELECT 1');
          await c.expect(id, 'SELECT CONNECTION_ID()');
        });
      });
      await t.test('KILL of an unknown id: 1094', async () => {
        for (const sql of ['KILL QUERY ?', 'KILL ?', 'KILL CONNECTION ?']) await expectKillError(b, sql, 999999999, kind);
        await b.expect('1', 'SELECT 1');
      });
    });
  });
}

test('KILL CONNECTION of an idle createPool connection: the pool recovers', TEST_MS, async () => {
  const pool = mysql.createPool({ ...baseOpts, database: DB, connectionLimit: 2 });
  const poolQuery = (sql) => bounded(pool.query(sql), `pool.query(${sql})`);
  try {
    const pc = await bounded(pool.getConnection(), 'pool.getConnection()');
    const [[{ id }]] = await bounded(pc.query('SELECT CONNECTION_ID() AS id'), 'pool connection: CONNECTION_ID()');
    pc.release();
    await withSessions(['killer B'], (b) => b.run('KILL ?', [Number(id)]));
    // The pool may hand out the killed connection once before it noticed the close.
    const answers = [];
    let failures = 0;
    while (answers.length < 5 && failures <= 1) {
      try {
        answers.push(String((await poolQuery('SELECT CONNECTION_ID() AS id'))[0][0].id));
      } catch (e) {
        assert.doesNotMatch(e.message, /hang/);
        failures++;
      }
    }
    assert.equal(answers.length, 5, `pool after KILL ${id}: ${failures} failed queries`);
    assert.ok(!answers.includes(String(id)), `pool after KILL ${id} still answers from it: ${answers}`);
  } finally {
    await bounded(pool.end(), 'pool.end()').catch(() => {});
  }
});

// ---------------------------------------------------------------------------------
// 6. LOAD DATA LOCAL INFILE
// ---------------------------------------------------------------------------------

test('LOAD DATA LOCAL INFILE with infileStreamFactory', TEST_MS, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compat-node-'));
  const file = path.join(dir, 'load.csv');
  fs.writeFileSync(file, '1,plain,1.5\n2,"with, comma",-2\n3,"héllo 🚀",\\N\n');
  try {
    await withSessions(['session'], async (s) => {
      await s.run('DROP TABLE IF EXISTS node_load');
      await s.run('CREATE TABLE node_load (id INT PRIMARY KEY, s VARCHAR(40), d DECIMAL(6,2)) DEFAULT CHARSET=utf8mb4');
      const sql = `LOAD DATA LOCAL INFILE '${file}' INTO TABLE node_load CHARACTER SET utf8mb4
        FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' LINES TERMINATED BY '\\n'`;
      const [res] = await bounded(s.c.query({ sql, infileStreamFactory: (p) => fs.createReadStream(p) }), 'LOAD DATA LOCAL INFILE');
      assert.equal(res.affectedRows, 3, 'affectedRows of LOAD DATA');
      await s.expect('3', 'SELECT COUNT(*) FROM node_load');
      await s.expect('1,plain,1.50|2,with, comma,-2.00|3,héllo 🚀,NULL',
        "SELECT GROUP_CONCAT(CONCAT_WS(',', id, s, IFNULL(d, 'NULL')) ORDER BY id SEPARATOR '|') FROM node_load");
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------
// 7. Session tracking settable by the client
// ---------------------------------------------------------------------------------

test('SET session_track_* by the client', TEST_MS, async () => {
  await withSessions(['session'], async (s) => {
    const failed = [];
    for (const sql of ['SET session_track_schema = OFF', 'SET session_track_state_change = ON',
      "SET session_track_system_variables = 'autocommit'"]) {
      await s.run(sql).catch((e) => failed.push(`${sql}: ${e.message}`));
    }
    assert.deepEqual(failed, []);
    await s.expect('autocommit\t0\t1', 'SELECT @@session_track_system_variables, @@session_track_schema, @@session_track_state_change');
    await s.run('SET autocommit = 0');
    await s.run('SET autocommit = 1');
    await s.run(`USE ${DB}`);
    await s.expect(`${DB}\t1`, 'SELECT DATABASE(), @@autocommit');
  });
});

// ---------------------------------------------------------------------------------
// 8. Reads see writes acknowledged on another connection
// ---------------------------------------------------------------------------------

const ROUNDS = 200;

// Inserts id through write, reads it through read: all four combinations of query() and execute().
async function roundTrip(write, read, id) {
  const kind = (i) => (i % 2 ? 'execute' : 'query');
  await bounded(write[kind(id)]('INSERT INTO node_raw VALUES (?, ?)', [id, id]), `insert ${id}`);
  const [rows] = await bounded(read[kind(id >> 1)]('SELECT COUNT(*) AS n FROM node_raw WHERE id = ?', [id]), `select ${id}`);
  return Number(rows[0].n) === 1 ? null : `id ${id}: not visible right after the acknowledged insert`;
}

test('read-after-write: a write acknowledged on one connection is read on another', TEST_MS, async (t) => {
  await withSessions(['setup'], async (s) => {
    await s.run('DROP TABLE IF EXISTS node_raw');
    await s.run('CREATE TABLE node_raw (id INT PRIMARY KEY, v INT) ENGINE=InnoDB');
  });
  await t.test('two createConnection connections, 200 rounds', async () => {
    await withSessions(['writer A', 'reader B'], async (a, b) => {
      const misses = [];
      for (let i = 0; i < ROUNDS; i++) {
        const m = await roundTrip(a.c, b.c, 10000 + i);
        if (m) misses.push(m);
      }
      assert.deepEqual(misses.slice(0, 5), [], `${misses.length} of ${ROUNDS} rounds missed`);
    });
  });
  await t.test('createPool (connectionLimit 4, 4 workers), 200 rounds', async () => {
    const pool = mysql.createPool({ ...baseOpts, database: DB, connectionLimit: 4 });
    const misses = [];
    try {
      await Promise.all([0, 1, 2, 3].map(async (w) => {
        for (let i = 0; i < ROUNDS / 4; i++) {
          const m = await roundTrip(pool, pool, 20000 + w * ROUNDS + i);
          if (m) misses.push(m);
        }
      }));
    } finally {
      await bounded(pool.end(), 'pool.end()').catch(() => {});
    }
    assert.deepEqual(misses.slice(0, 5), [], `${misses.length} of ${ROUNDS} rounds missed`);
  });
});
