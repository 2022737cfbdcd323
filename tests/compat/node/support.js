'use strict';
// Shared settings of the node compat checks (compat.test.js, session.test.js): the endpoints
// from the environment, mysql2 connection options, and `bounded`, which turns a hang into a
// failure that names the statement it waited for.
//
// Environment: TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD (the proxy, or MariaDB
// itself with COMPAT_DIRECT=1), TESSERA_USER2 TESSERA_PASSWORD2 (second account),
// MARIADB_PORT MARIADB_REPLICA_PORTS [MARIADB_HOST MARIADB_USER MARIADB_PASSWORD] (the servers
// themselves, admin account).

const mysql = require('mysql2/promise');

const DB = 'compat_node';
const host = process.env.TESSERA_HOST || '127.0.0.1';
const port = Number(process.env.TESSERA_PORT);
const user = process.env.TESSERA_USER || 'app';
const password = process.env.TESSERA_PASSWORD || 'app';
const mariadbPort = process.env.MARIADB_PORT ? Number(process.env.MARIADB_PORT) : null;

if (!port) {
  console.error('TESSERA_PORT is not set (run through tests/compat/node/run.sh)');
  process.exit(2);
}

const baseOpts = {
  host,
  port,
  user,
  password,
  charset: 'utf8mb4_general_ci',
  supportBigNumbers: true,
  bigNumberStrings: true, // BIGINT (UNSIGNED) as exact strings
  decimalNumbers: false, // DECIMAL as exact strings
  dateStrings: true, // DATE/TIME/DATETIME/TIMESTAMP as strings
  jsonStrings: true, // JSON columns as the exact stored text
  connectTimeout: 10000,
};

function connect(extra = {}) {
  return mysql.createConnection({ ...baseOpts, database: DB, ...extra });
}

// CREATE DATABASE compat_node (through the endpoint, without a default schema).
async function createDatabase() {
  const boot = await mysql.createConnection(baseOpts);
  try {
    await boot.query(`CREATE DATABASE IF NOT EXISTS ${DB} CHARACTER SET utf8mb4`);
  } finally {
    await boot.end();
  }
}

// The demo's servers themselves with the admin account (port: MARIADB_PORT or a replica).
function connectServer(serverPort = mariadbPort, extra = {}) {
  return mysql.createConnection({
    ...baseOpts,
    port: serverPort,
    user: process.env.MARIADB_USER || 'tessera',
    password: process.env.MARIADB_PASSWORD || 'tessera',
    host: process.env.MARIADB_HOST || host,
    ...extra,
  });
}

// Every server port: the primary and the replicas.
function serverPorts() {
  const ports = [mariadbPort, ...(process.env.MARIADB_REPLICA_PORTS || '').split(',').map((p) => Number(p.trim()))];
  return ports.filter((p) => p);
}

// bounded(promise, what, onHang, ms): the promise's outcome, or (after ms) an error
// "<what>: no answer within <ms> ms (hang)"; onHang (e.g. destroying the connection) runs first.
const STMT_MS = 15000;
async function bounded(promise, what, onHang, ms = STMT_MS) {
  let timer;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => {
      if (onHang) onHang();
      reject(new Error(`${what}: no answer within ${ms} ms (hang)`));
    }, ms);
  });
  try {
    return await Promise.race([promise, hang]);
  } finally {
    clearTimeout(timer);
  }
}

module.exports = { mysql, DB, host, port, user, password, mariadbPort, baseOpts, connect, createDatabase, connectServer, serverPorts, bounded, STMT_MS };
