'use strict';
// Compatibility checks for the mysql2 driver talking to MariaDB through Tessera.
// Every check asserts the answers (values, error numbers, SQLSTATEs, row counts),
// not only the absence of errors.
//
// connection.execute() = server-side prepared statement (COM_STMT_PREPARE/EXECUTE,
// binary result rows); connection.query() = text protocol (COM_QUERY).
//
// Environment (read in support.js): TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD (the proxy),
// MARIADB_PORT [MARIADB_USER MARIADB_PASSWORD] (MariaDB itself, the reference for
// insert ids / affected rows).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { mysql, DB, baseOpts, password, mariadbPort, connect, createDatabase, connectServer } = require('./support.js');

function connectDirect() {
  return connectServer(mariadbPort, { database: DB });
}

let conn; // main connection through Tessera
let direct = null; // straight to MariaDB (reference), if MARIADB_PORT is set

before(async () => {
  await createDatabase();
  conn = await connect();
  if (mariadbPort) direct = await connectDirect();
});

after(async () => {
  if (conn) await conn.end().catch(() => {});
  if (direct) await direct.end().catch(() => {});
});

async function expectAlive(c, what) {
  const [r1] = await c.query('SELECT 1 AS one');
  assert.equal(r1[0].one, 1, `connection unusable (text) after ${what}`);
  const [r2] = await c.execute('SELECT ? AS one', [1]);
  assert.equal(Number(r2[0].one), 1, `connection unusable (prepared) after ${what}`);
}

// ---------------------------------------------------------------------------------
// Column types
// ---------------------------------------------------------------------------------

const TYPES_DDL = `CREATE TABLE types (
  id INT PRIMARY KEY,
  c_tinyint TINYINT, c_smallint SMALLINT, c_mediumint MEDIUMINT, c_int INT,
  c_bigint BIGINT, c_ubigint BIGINT UNSIGNED,
  c_float FLOAT, c_double DOUBLE, c_decimal DECIMAL(65,30),
  c_char CHAR(10), c_varchar VARCHAR(100), c_text TEXT,
  c_binary BINARY(4), c_varbinary VARBINARY(16), c_blob BLOB,
  c_date DATE, c_time TIME(6), c_datetime DATETIME(6), c_timestamp TIMESTAMP(6) NULL,
  c_year YEAR, c_bit BIT(8), c_enum ENUM('a','b','c'), c_set SET('x','y','z'), c_json JSON
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;

const COLS = [
  'c_tinyint', 'c_smallint', 'c_mediumint', 'c_int', 'c_bigint', 'c_ubigint', 'c_float',
  'c_double', 'c_decimal', 'c_char', 'c_varchar', 'c_text', 'c_binary', 'c_varbinary',
  'c_blob', 'c_date', 'c_time', 'c_datetime', 'c_timestamp', 'c_year', 'c_bit', 'c_enum',
  'c_set', 'c_json',
];

const UNICODE = 'héllo wörld 🚀';
const TEXT = '日本語テキスト — héllo wörld 🚀 ñ € 𝄞';
const DECIMAL = '-12345678901234567890123456789012345.123456789012345678901234567890';
const JSONSTR = '{"k": [1, 2, "é"], "emoji": "🚀"}';
const BINARY = Buffer.from([0x00, 0xff, 0x7f, 0x80]);
const VARBINARY = Buffer.from([0x00, 0xff, 0x00, 0xff, 0x00]);
const BLOB = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

// What mysql2 must hand back for the full row, with the options above.
const EXPECTED = {
  c_tinyint: -128,
  c_smallint: -32768,
  c_mediumint: -8388608,
  c_int: -2147483648,
  c_bigint: '-9223372036854775808',
  c_ubigint: '18446744073709551615',
  c_float: 1.5,
  c_double: 3.141592653589793,
  c_decimal: DECIMAL,
  c_char: 'abc',
  c_varchar: UNICODE,
  c_text: TEXT,
  c_binary: BINARY,
  c_varbinary: VARBINARY,
  c_blob: BLOB,
  c_date: '2024-02-29',
  c_time: '12:34:56.789012',
  c_datetime: '2024-02-29 23:59:58.123456',
  c_timestamp: '2024-01-02 03:04:05.000001',
  c_year: 2024,
  c_bit: Buffer.from([0xa5]),
  c_enum: 'b',
  c_set: 'x,z',
  c_json: JSONSTR,
};

const PREPARED_ARGS = [
  -128, -32768, -8388608, -2147483648, -9223372036854775808n, 18446744073709551615n, 1.5,
  3.141592653589793, DECIMAL, 'abc', UNICODE, TEXT, BINARY, VARBINARY, BLOB, '2024-02-29',
  '12:34:56.789012', '2024-02-29 23:59:58.123456', '2024-01-02 03:04:05.000001', 2024,
  Buffer.from([0xa5]), 'b', 'x,z', JSONSTR,
];

const hexOf = (b) => b.toString('hex');
const TEXT_INSERT = (id) => `INSERT INTO types (id, ${COLS.join(', ')}) VALUES (${id}, -128, -32768,
  -8388608, -2147483648, -9223372036854775808, 18446744073709551615, 1.5, 3.141592653589793,
  ${DECIMAL}, 'abc', '${UNICODE}', '${TEXT}', X'${hexOf(BINARY)}', X'${hexOf(VARBINARY)}',
  X'${hexOf(BLOB)}', '2024-02-29', '12:34:56.789012', '2024-02-29 23:59:58.123456',
  '2024-01-02 03:04:05.000001', 2024, b'10100101', 'b', 'x,z', '${JSONSTR}')`;

function normalize(v) {
  if (Buffer.isBuffer(v)) return `<buffer ${v.toString('hex')}>`;
  if (typeof v === 'bigint') return `<bigint ${v}>`;
  return v;
}

function checkFullRow(row, how) {
  const bad = [];
  for (const c of COLS) {
    const got = normalize(row[c]);
    const want = normalize(EXPECTED[c]);
    if (got !== want) bad.push(`${c}: got ${JSON.stringify(got)} (${typeof row[c]}), want ${JSON.stringify(want)}`);
  }
  assert.deepEqual(bad, [], `${how}:\n  ${bad.join('\n  ')}`);
}

function checkNullRow(row, how) {
  const notNull = COLS.filter((c) => row[c] !== null);
  assert.deepEqual(notNull, [], `${how}: columns not NULL in the all-NULL row`);
}

test('column types round trip (prepared and text, incl. NULL)', async (t) => {
  await conn.query('DROP TABLE IF EXISTS types');
  await conn.query(TYPES_DDL);
  const ph = COLS.map(() => '?').join(', ');
  await conn.execute(`INSERT INTO types (id, ${COLS.join(', ')}) VALUES (?, ${ph})`, [1, ...PREPARED_ARGS]);
  await conn.query(TEXT_INSERT(2));
  await conn.execute(`INSERT INTO types (id, ${COLS.join(', ')}) VALUES (?, ${ph})`, [3, ...COLS.map(() => null)]);
  await conn.query('INSERT INTO types (id) VALUES (4)');

  const cases = [
    [1, true, 'prepared insert'],
    [2, true, 'text insert'],
    [3, false, 'prepared all-NULL insert'],
    [4, false, 'text all-NULL insert'],
  ];
  for (const [id, full, how] of cases) {
    for (const prepared of [true, false]) {
      const label = `${how}, read via ${prepared ? 'execute() SELECT ... WHERE id=?' : 'query() SELECT'}`;
      await t.test(label, async () => {
        const [rows] = prepared
          ? await conn.execute(`SELECT ${COLS.join(', ')} FROM types WHERE id = ?`, [id])
          : await conn.query(`SELECT ${COLS.join(', ')} FROM types WHERE id = ${id}`);
        assert.equal(rows.length, 1, `${label}: row count`);
        if (full) checkFullRow(rows[0], label);
        else checkNullRow(rows[0], label);
      });
    }
  }

  await t.test('prepared SELECT with bound parameter of each kind in WHERE', async () => {
    const probes = [
      ['c_ubigint', 18446744073709551615n],
      ['c_ubigint', '18446744073709551615'],
      ['c_bigint', -9223372036854775808n],
      ['c_decimal', DECIMAL],
      ['c_varchar', UNICODE],
      ['c_varbinary', VARBINARY],
      ['c_binary', BINARY],
      ['c_datetime', '2024-02-29 23:59:58.123456'],
      ['c_double', 3.141592653589793],
    ];
    for (const [col, arg] of probes) {
      const [rows] = await conn.execute(`SELECT GROUP_CONCAT(id ORDER BY id) AS ids FROM types WHERE ${col} = ?`, [arg]);
      assert.equal(rows[0].ids, '1,2', `WHERE ${col} = ? (${typeof arg})`);
    }
    const [rows] = await conn.execute('SELECT COUNT(*) AS n FROM types WHERE c_int IS NULL AND ? IS NULL', [null]);
    assert.equal(Number(rows[0].n), 2, 'NULL parameter');
  });

  await t.test('prepared-inserted and text-inserted rows are identical on the server', async () => {
    const [rows] = await conn.query(`SELECT COUNT(*) AS n FROM types a JOIN types b ON a.id = 1 AND b.id = 2
      AND ${COLS.map((c) => `a.${c} <=> b.${c}`).join(' AND ')}`);
    assert.equal(Number(rows[0].n), 1);
  });

  // mysql2 parses MariaDB JSON columns through MariaDB's extended column metadata, which
  // Tessera negotiates when its backend offers it.
  await t.test('JSON column parsed by the driver (jsonStrings=false)', async () => {
    const c2 = await connect({ jsonStrings: false });
    try {
      const [p] = await c2.execute('SELECT c_json FROM types WHERE id = ?', [1]);
      const [q] = await c2.query('SELECT c_json FROM types WHERE id = 2');
      assert.deepEqual(p[0].c_json, JSON.parse(JSONSTR), 'execute');
      assert.deepEqual(q[0].c_json, JSON.parse(JSONSTR), 'query');
    } finally {
      await c2.end();
    }
  });

  await t.test('DATETIME(6) as Date keeps milliseconds (dateStrings=false)', async () => {
    const c2 = await connect({ dateStrings: false, timezone: 'Z' });
    try {
      const [p] = await c2.execute('SELECT c_datetime FROM types WHERE id = ?', [1]);
      const [q] = await c2.query('SELECT c_datetime FROM types WHERE id = 1');
      for (const [rows, how] of [[p, 'execute'], [q, 'query']]) {
        assert.ok(rows[0].c_datetime instanceof Date, `${how}: not a Date`);
        assert.equal(rows[0].c_datetime.toISOString(), '2024-02-29T23:59:58.123Z', how);
      }
    } finally {
      await c2.end();
    }
  });
});

// ---------------------------------------------------------------------------------
// 1 MB BLOB
// ---------------------------------------------------------------------------------

test('1 MB BLOB byte-exact (prepared and text)', async () => {
  await conn.query('DROP TABLE IF EXISTS blobs');
  await conn.query('CREATE TABLE blobs (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB');
  const blob = crypto.randomBytes(1 << 20);
  blob.fill(0x00, 1000, 1100);
  blob.fill(0xff, 2000, 2100);
  blob[0] = 0x00;
  blob[1] = 0xff;
  blob[blob.length - 2] = 0x00;
  blob[blob.length - 1] = 0xff;
  const sha = crypto.createHash('sha256').update(blob).digest('hex');

  await conn.execute('INSERT INTO blobs VALUES (?, ?)', [1, blob]);
  await conn.query(`INSERT INTO blobs VALUES (2, X'${blob.toString('hex')}')`);
  await conn.query('INSERT INTO blobs VALUES (?, ?)', [3, blob]); // client-side escaped text query

  for (const id of [1, 2, 3]) {
    for (const prepared of [true, false]) {
      const [rows] = prepared
        ? await conn.execute('SELECT b FROM blobs WHERE id = ?', [id])
        : await conn.query(`SELECT b FROM blobs WHERE id = ${id}`);
      const got = rows[0].b;
      assert.ok(Buffer.isBuffer(got), `id ${id} prepared=${prepared}: not a Buffer`);
      assert.ok(
        got.equals(blob),
        `id ${id} prepared=${prepared}: ${got.length} bytes sha256 ${crypto.createHash('sha256').update(got).digest('hex')}, want ${blob.length} bytes ${sha}`
      );
    }
    const [rows] = await conn.execute('SELECT LENGTH(b) AS n, SHA2(b, 256) AS h FROM blobs WHERE id = ?', [id]);
    assert.equal(Number(rows[0].n), blob.length, `id ${id}: server LENGTH`);
    assert.equal(rows[0].h, sha, `id ${id}: server SHA2`);
  }
});

// ---------------------------------------------------------------------------------
// Transactions
// ---------------------------------------------------------------------------------

test('transactions: commit visible, rollback not visible', async () => {
  await conn.query('DROP TABLE IF EXISTS tx');
  await conn.query('CREATE TABLE tx (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB');
  const other = await connect();
  const count = async (c, id) => Number((await c.execute('SELECT COUNT(*) AS n FROM tx WHERE id = ?', [id]))[0][0].n);
  try {
    await conn.beginTransaction();
    await conn.query("INSERT INTO tx VALUES (1, 'committed')");
    await conn.execute('INSERT INTO tx VALUES (?, ?)', [2, 'committed']);
    assert.equal((await count(conn, 1)) + (await count(conn, 2)), 2, 'inside transaction: own rows');
    assert.equal(await count(other, 1), 0, 'other connection sees uncommitted row');
    await conn.commit();
    assert.equal((await count(other, 1)) + (await count(other, 2)), 2, 'after COMMIT: visible to other connection');

    await conn.beginTransaction();
    await conn.query("INSERT INTO tx VALUES (3, 'rolled back')");
    await conn.execute('INSERT INTO tx VALUES (?, ?)', [4, 'rolled back']);
    await conn.query("UPDATE tx SET v = 'changed' WHERE id = 1");
    assert.equal((await count(conn, 3)) + (await count(conn, 4)), 2, 'inside transaction: own rows');
    await conn.rollback();
    assert.equal((await count(conn, 3)) + (await count(conn, 4)), 0, 'after ROLLBACK: rows visible to same connection');
    assert.equal((await count(other, 3)) + (await count(other, 4)), 0, 'after ROLLBACK: rows visible to other connection');
    const [r] = await other.query('SELECT v FROM tx WHERE id = 1');
    assert.equal(r[0].v, 'committed', 'after ROLLBACK: update undone');

    // autocommit=0 with text COMMIT/ROLLBACK
    await conn.query('SET autocommit = 0');
    await conn.query("INSERT INTO tx VALUES (5, 'ac0')");
    await conn.query('ROLLBACK');
    await conn.execute('INSERT INTO tx VALUES (?, ?)', [6, 'ac0']);
    await conn.query('COMMIT');
    await conn.query('SET autocommit = 1');
    assert.equal(await count(other, 5), 0, 'autocommit=0: rolled-back row visible');
    assert.equal(await count(other, 6), 1, 'autocommit=0: committed row not visible');
  } finally {
    await other.end();
  }
});

// ---------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------

async function expectError(promise, errno, sqlState, what) {
  let err = null;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `${what}: no error raised`);
  assert.equal(err.errno, errno, `${what}: errno (${err.message})`);
  assert.equal(err.sqlState, sqlState, `${what}: sqlState (${err.message})`);
}

test('login with a wrong password -> 1045/28000', async () => {
  await expectError(connect({ password: `${password}-wrong` }), 1045, '28000', 'wrong password');
});

// caching_sha2_password environment of tests/compat/run.sh (TESSERA_SHA2_PORT): full
// authentication (RSA key over plain TCP) on the first login, fast auth on the next ones.
test('caching_sha2_password login (full + fast auth), wrong password -> 1045/28000', { skip: !process.env.TESSERA_SHA2_PORT && 'TESSERA_SHA2_PORT not set' }, async () => {
  const opts = { ...baseOpts, port: Number(process.env.TESSERA_SHA2_PORT) };
  for (let i = 0; i < 3; i++) {
    const c = await mysql.createConnection(opts);
    try {
      const [t] = await c.query("SELECT 'héllo 🚀' AS s, 1 + 1 AS n");
      assert.deepEqual({ s: t[0].s, n: Number(t[0].n) }, { s: 'héllo 🚀', n: 2 }, `login ${i}, text`);
      const [p] = await c.execute('SELECT ? AS s, ? + 1 AS n', ['héllo 🚀', 1]);
      assert.deepEqual({ s: p[0].s, n: Number(p[0].n) }, { s: 'héllo 🚀', n: 2 }, `login ${i}, prepared`);
    } finally {
      await c.end();
    }
  }
  await expectError(mysql.createConnection({ ...opts, password: `${password}-wrong` }), 1045, '28000', 'caching_sha2 wrong password');
});

test('errors: number and SQLSTATE passed through', async (t) => {
  await conn.query('DROP TABLE IF EXISTS errs');
  await conn.query('CREATE TABLE errs (id INT PRIMARY KEY) ENGINE=InnoDB');
  await conn.query('INSERT INTO errs VALUES (1)');

  await t.test('duplicate key, query() -> 1062/23000', async () => {
    await expectError(conn.query('INSERT INTO errs VALUES (1)'), 1062, '23000', 'text duplicate key');
    await expectAlive(conn, 'text duplicate key');
  });
  await t.test('duplicate key, execute() -> 1062/23000', async () => {
    await expectError(conn.execute('INSERT INTO errs VALUES (?)', [1]), 1062, '23000', 'prepared duplicate key');
    await expectAlive(conn, 'prepared duplicate key');
  });
  await t.test('syntax error, query() -> 1064/42000', async () => {
    await expectError(conn.query('SELEC 1'), 1064, '42000', 'text syntax error');
    await expectAlive(conn, 'text syntax error');
  });
  await t.test('syntax error at COM_STMT_PREPARE, prepare() and execute() -> 1064/42000', async () => {
    await expectError(conn.prepare('SELEC ? FROM errs'), 1064, '42000', 'prepare() syntax error');
    await expectError(conn.execute('SELEC ? FROM errs', [1]), 1064, '42000', 'execute() syntax error');
    await expectAlive(conn, 'prepare syntax error');
  });
  await t.test('unknown table at COM_STMT_PREPARE -> 1146/42S02', async () => {
    await expectError(conn.execute('SELECT * FROM no_such_table_xyz WHERE id = ?', [1]), 1146, '42S02', 'prepare unknown table');
    await expectAlive(conn, 'prepare unknown table');
  });
  await t.test('error inside a transaction keeps the transaction', async () => {
    await conn.beginTransaction();
    await conn.query('INSERT INTO errs VALUES (2)');
    await expectError(conn.execute('INSERT INTO errs VALUES (?)', [2]), 1062, '23000', 'dup in transaction');
    const [r] = await conn.query('SELECT COUNT(*) AS n FROM errs WHERE id = 2');
    assert.equal(Number(r[0].n), 1, 'own row after error in transaction');
    await conn.rollback();
    const [r2] = await conn.query('SELECT COUNT(*) AS n FROM errs WHERE id = 2');
    assert.equal(Number(r2[0].n), 0, 'row gone after rollback');
  });
});

// ---------------------------------------------------------------------------------
// Stored procedure with two result sets
// ---------------------------------------------------------------------------------

test('stored procedure CALL returning two result sets', async (t) => {
  const ddl = `CREATE PROCEDURE two_sets(IN p INT)
BEGIN
  SELECT p AS a, 'first' AS label;
  SELECT p * 2 AS a, 'second 🚀' AS label UNION ALL SELECT p * 3, 'third';
END`;
  await conn.query('DROP PROCEDURE IF EXISTS two_sets');
  let createErr = null;
  try {
    // A BEGIN ... END body is one statement: no multipleStatements needed.
    await conn.query(ddl);
  } catch (e) {
    createErr = e;
    if (!direct) throw e;
    await direct.query(ddl); // so the CALL checks still run
  }
  await t.test('CREATE PROCEDURE with BEGIN ... END body (no multipleStatements)', () => {
    assert.equal(createErr, null, `CREATE PROCEDURE through Tessera failed: ${createErr && createErr.message}`);
  });

  const want = [
    [{ a: 7, label: 'first' }],
    [{ a: 14, label: 'second 🚀' }, { a: 21, label: 'third' }],
  ];
  const plain = (rows) => rows.map((r) => ({ a: Number(r.a), label: r.label }));
  for (const prepared of [false, true]) {
    await t.test(prepared ? 'execute("CALL two_sets(?)")' : 'query("CALL two_sets(7)")', async () => {
      const [res] = prepared ? await conn.execute('CALL two_sets(?)', [7]) : await conn.query('CALL two_sets(7)');
      assert.ok(Array.isArray(res) && res.length === 3, `expected [set1, set2, OK], got ${JSON.stringify(res)}`);
      assert.deepEqual([plain(res[0]), plain(res[1])], want);
      assert.equal(res[2].constructor.name, 'ResultSetHeader', 'final OK packet of the CALL');
      await expectAlive(conn, 'CALL');
    });
  }
});

// ---------------------------------------------------------------------------------
// insertId / affectedRows equal to what MariaDB reports
// ---------------------------------------------------------------------------------

async function idSequence(c, table) {
  const steps = [
    ['text insert 1 row', `INSERT INTO ${table} (k, v) VALUES (1, 1)`],
    ['text insert 3 rows', `INSERT INTO ${table} (k, v) VALUES (2, 2), (3, 3), (4, 4)`],
    ['prepared insert 1 row', `INSERT INTO ${table} (k, v) VALUES (?, ?)`, [5, 5]],
    ['prepared insert 2 rows', `INSERT INTO ${table} (k, v) VALUES (?, ?), (?, ?)`, [6, 6, 7, 7]],
    ['prepared insert explicit id', `INSERT INTO ${table} (id, k, v) VALUES (?, ?, ?)`, [5000, 8, 8]],
    ['text update 2 rows', `UPDATE ${table} SET v = v + 1 WHERE k <= 2`],
    ['text update matched not changed', `UPDATE ${table} SET v = v WHERE k <= 2`],
    ['prepared update 3 rows', `UPDATE ${table} SET v = ? WHERE k BETWEEN ? AND ?`, [100, 3, 5]],
    ['prepared update 0 rows', `UPDATE ${table} SET v = ? WHERE k > ?`, [1, 1000]],
    ['text upsert (update)', `INSERT INTO ${table} (k, v) VALUES (1, 1) ON DUPLICATE KEY UPDATE v = v + 10`],
    ['prepared upsert (insert)', `INSERT INTO ${table} (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = v + 10`, [9, 9]],
    ['text insert ignore dup', `INSERT IGNORE INTO ${table} (k, v) VALUES (1, 1)`],
    ['text replace', `REPLACE INTO ${table} (id, k, v) VALUES (1000, 1, 42)`],
    ['prepared delete 2 rows', `DELETE FROM ${table} WHERE k IN (?, ?)`, [6, 7]],
    ['text delete 0 rows', `DELETE FROM ${table} WHERE k = 12345`],
  ];
  await c.query(`DROP TABLE IF EXISTS ${table}`);
  await c.query(`CREATE TABLE ${table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT UNIQUE, v INT) ENGINE=InnoDB AUTO_INCREMENT=1000`);
  const out = [];
  for (const [name, sql, args] of steps) {
    const [r] = args ? await c.execute(sql, args) : await c.query(sql);
    out.push({ step: name, insertId: Number(r.insertId), affectedRows: r.affectedRows, changedRows: r.changedRows });
  }
  const [t1] = await c.query('SELECT LAST_INSERT_ID() AS id');
  const [t2] = await c.execute('SELECT LAST_INSERT_ID() + ? AS id', [0]);
  out.push({ step: 'SELECT LAST_INSERT_ID() text/prepared', insertId: Number(t1[0].id), affectedRows: Number(t2[0].id) });
  return out;
}

test('insertId / affectedRows equal to what MariaDB reports', async () => {
  const got = await idSequence(conn, 'ids_proxy');
  // mysql2 sets CLIENT_FOUND_ROWS: affectedRows of UPDATE counts matched rows.
  const hard = [
    ['text insert 1 row', 1000, 1],
    ['text insert 3 rows', 1001, 3],
    ['prepared insert 1 row', 1004, 1],
    ['prepared insert 2 rows', 1005, 2],
    ['prepared insert explicit id', 5000, 1],
    ['text update 2 rows', 0, 2],
    ['text update matched not changed', 0, 2],
    ['prepared update 3 rows', 0, 3],
    ['prepared update 0 rows', 0, 0],
    ['text upsert (update)', 1000, 2],
    ['prepared upsert (insert)', 5002, 1],
    ['text insert ignore dup', 0, 0],
    ['text replace', 1000, 2],
    ['prepared delete 2 rows', 0, 2],
    ['text delete 0 rows', 0, 0],
    ['SELECT LAST_INSERT_ID() text/prepared', 5002, 5002],
  ];
  const hardRows = hard.map(([step, insertId, affectedRows]) => ({ step, insertId, affectedRows }));
  const strip = (rows) => rows.map(({ step, insertId, affectedRows }) => ({ step, insertId, affectedRows }));
  if (direct) {
    const ref = await idSequence(direct, 'ids_direct');
    assert.deepEqual(got, ref, 'through Tessera vs MariaDB direct (insertId, affectedRows, changedRows)');
  }
  assert.deepEqual(strip(got), hardRows, 'expected MariaDB 10.11 values');
});

test('LAST_INSERT_ID() stays per session when another session inserts (explicit-id insert in between)', async () => {
  const a = await connect();
  const b = await connect();
  const problems = [];
  try {
    await a.query('DROP TABLE IF EXISTS lii');
    await a.query('CREATE TABLE lii (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB');
    for (let i = 0; i < 20; i++) {
      const [r1] = await a.query('INSERT INTO lii (v) VALUES (1)'); // A: LAST_INSERT_ID() = r1.insertId
      const [r2] = await b.execute('INSERT INTO lii (v) VALUES (?)', [2]); // B: its own id
      // An explicit id is reported in the OK packet but does not change LAST_INSERT_ID().
      const [r3] = await a.query(`INSERT INTO lii (id, v) VALUES (${-1 - i}, 3)`);
      const [[t]] = await a.query('SELECT LAST_INSERT_ID() AS id');
      const [[p]] = await a.execute('SELECT LAST_INSERT_ID() + ? AS id', [0]);
      if (Number(t.id) !== r1.insertId || Number(p.id) !== r1.insertId) {
        problems.push(`round ${i}: A reads LAST_INSERT_ID() ${t.id} (text) / ${p.id} (prepared), want its own ${r1.insertId}; B's id was ${r2.insertId}, explicit insert reported ${r3.insertId}`);
      }
    }
  } finally {
    await a.end();
    await b.end();
  }
  assert.deepEqual(problems.slice(0, 5), [], `${problems.length} of 20 rounds wrong`);
});

// ---------------------------------------------------------------------------------
// 20 concurrent connections with their own @v and time_zone
// ---------------------------------------------------------------------------------

test('20 concurrent sessions: own SET @v / SET time_zone, 50 interleaved reads each', async () => {
  const WORKERS = 20;
  const ROUNDS = 50;
  const conns = await Promise.all(Array.from({ length: WORKERS }, () => connect()));
  const problems = [];
  try {
    const tzOf = (w) => {
      const h = w - 9;
      return `${h < 0 ? '-' : '+'}${String(Math.abs(h)).padStart(2, '0')}:${String((w * 15) % 60).padStart(2, '0')}`;
    };
    await Promise.all(
      conns.map(async (c, w) => {
        await c.query(`SET @v = 'worker-${w}-🚀'`);
        await c.execute('SET time_zone = ?', [tzOf(w)]);
      })
    );
    await Promise.all(
      conns.map(async (c, w) => {
        const myV = `worker-${w}-🚀`;
        const myTZ = tzOf(w);
        for (let i = 0; i < ROUNDS; i++) {
          const [rows] =
            i % 2 === 0
              ? await c.query(`SELECT @v AS v, @@session.time_zone AS tz, ${i} AS i`)
              : await c.execute('SELECT @v AS v, @@session.time_zone AS tz, ? AS i', [i]);
          const r = rows[0];
          if (r.v !== myV || r.tz !== myTZ || Number(r.i) !== i) {
            problems.push(`worker ${w} round ${i}: @v=${r.v} tz=${r.tz} i=${r.i}, want ${myV} ${myTZ} ${i}`);
          }
          if (Math.random() < 0.2) await new Promise((res) => setTimeout(res, Math.floor(Math.random() * 3)));
        }
        const [off] = await c.query("SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i') AS o");
        if (off[0].o !== myTZ.replace(/^\+/, '')) problems.push(`worker ${w}: NOW()-UTC_TIMESTAMP() = ${off[0].o}, want ${myTZ}`);
      })
    );
  } finally {
    await Promise.all(conns.map((c) => c.end().catch(() => {})));
  }
  assert.deepEqual(problems.slice(0, 30), [], `${problems.length} mismatches`);

  // A fresh session inherits nobody's state.
  for (let i = 0; i < 5; i++) {
    const c = await connect();
    try {
      const [rows] = await c.query('SELECT @v AS v, @@session.time_zone AS tz, @@global.time_zone AS g');
      assert.deepEqual({ ...rows[0] }, { v: null, tz: rows[0].g, g: rows[0].g }, `fresh session ${i}: @v NULL, time_zone = global`);
    } finally {
      await c.end();
    }
  }
});
