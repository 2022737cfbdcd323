//! The bank the scenarios run on: four sandbox servers holding the shards of schema `bank`,
//! Tessera's configuration for them, direct reads of the shards (rows, XA RECOVER, open
//! transactions), and the audit of what the shards hold.

use crate::common::process::{ADMIN, LISTEN};
use std::collections::{BTreeMap, HashSet};
use tessera_sandbox::{Sandbox, SandboxOptions};

/// Servers, groups and shards (shard `i` = database `bank_i` on server `i`, group `g{i}`).
pub const SHARDS: usize = 4;
pub const ACCOUNTS: u64 = 40;
pub const START_BALANCE: i64 = 1000;
/// A transfer's id is `sequence * ID_STRIDE + destination account`, so that the audit can
/// credit the destination from the `transfers` row alone.
pub const ID_STRIDE: u64 = 1000;
/// XA RECOVER rows whose `data` starts with this are Tessera's branches.
pub const TESSERA_BRANCH: &str = "tsr:";

/// The four servers; server `i` holds shard database `bank_i` (group `g{i}`).
pub struct Bank {
    sandbox: Sandbox,
}

impl Bank {
    pub fn start() -> Bank {
        let sandbox = Sandbox::start(SandboxOptions {
            servers: SHARDS,
            ..Default::default()
        })
        .expect("sandbox of four servers");
        Bank { sandbox }
    }

    /// Tessera's configuration (with [`LISTEN`] and [`ADMIN`] left to fill in): one group per
    /// server, schema `bank` with `accounts` by `id` and `transfers` by `account`, both `mod`;
    /// `server_extra` goes into `[server]`.
    pub fn config(&self, server_extra: &str) -> String {
        let groups: String = self
            .sandbox
            .servers()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                format!(
                    "[[groups]]\nname = \"g{i}\"\nuser = \"tessera\"\npassword = \"tessera\"\nprimary = {{ address = \"127.0.0.1:{}\" }}\n",
                    s.port()
                )
            })
            .collect();
        let shards: Vec<String> = (0..SHARDS).map(|i| format!("\"g{i}:bank_{i}\"")).collect();
        format!(
            r#"[server]
listen = "{LISTEN}"
worker_threads = 2
cross_shard_lock_wait_s = 1
shutdown_timeout_ms = 1000
{server_extra}
[pool]
backoff_max_ms = 200
connect_timeout_ms = 1000
checkout_timeout_ms = 5000
[admin]
http_listen = "{ADMIN}"
[[users]]
name = "app"
password = "app"
{groups}
[[schemas]]
name = "bank"
shards = [{}]
[[schemas.tables]]
name = "accounts"
shard_key = "id"
function = "mod"
[[schemas.tables]]
name = "transfers"
shard_key = "account"
function = "mod"
"#,
            shards.join(", ")
        )
    }

    /// The rows of `sql` run as root on server `i`, split into columns.
    pub fn rows(&self, i: usize, sql: &str) -> Vec<Vec<String>> {
        let out = self
            .sandbox
            .server(i)
            .sql(sql)
            .unwrap_or_else(|e| panic!("s{i}: {sql}: {e}"));
        out.lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    }

    /// (account, balance, server) of every account row on every shard.
    pub fn accounts(&self) -> Vec<(u64, i64, usize)> {
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, &format!("SELECT id, balance FROM bank_{i}.accounts"))
                    .into_iter()
                    .map(move |r| (number(&r[0]), number(&r[1]), i))
            })
            .collect()
    }

    /// Every transfer row on every shard, with the server it was found on.
    pub fn transfers(&self) -> Vec<(TransferRow, usize)> {
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, &format!("SELECT id, account, amount FROM bank_{i}.transfers"))
                    .into_iter()
                    .map(move |r| {
                        let row = TransferRow {
                            id: number(&r[0]),
                            account: number(&r[1]),
                            amount: number(&r[2]),
                        };
                        (row, i)
                    })
            })
            .collect()
    }

    /// Tessera's prepared branches on all servers, as `s<i>: <xid data>`.
    pub fn in_doubt(&self) -> Vec<String> {
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, "XA RECOVER")
                    .into_iter()
                    .filter(|r| r.get(3).is_some_and(|data| data.starts_with(TESSERA_BRANCH)))
                    .map(move |r| format!("s{i}: {}", r[3]))
            })
            .collect()
    }

    /// Transactions open on any server (other than the asking session), as
    /// `s<i>: thread <id> <state> since <time> (<command> for <seconds> s)`; a prepared XA
    /// branch whose connection is gone shows as thread 0.
    pub fn open_transactions(&self) -> Vec<String> {
        let sql = "SELECT t.trx_mysql_thread_id, t.trx_state, t.trx_started, p.command, p.time \
                   FROM information_schema.innodb_trx t \
                   LEFT JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id \
                   WHERE t.trx_mysql_thread_id <> CONNECTION_ID()";
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, sql).into_iter().map(move |r| {
                    format!(
                        "s{i}: thread {} {} since {} ({} for {} s)",
                        r[0], r[1], r[2], r[3], r[4]
                    )
                })
            })
            .collect()
    }

    /// SIGKILLs server `i`, then starts it again on its data dir and port.
    pub fn crash_and_restart(&mut self, i: usize) {
        let server = self.sandbox.server_mut(i);
        server.kill().expect("SIGKILL the server");
        server.start().expect("restart the server");
    }
}

/// A number as the mariadb client printed it.
pub fn number<T: std::str::FromStr>(text: &str) -> T {
    text.parse().unwrap_or_else(|_| panic!("`{text}` is not a number"))
}

/// A row of `transfers`.
#[derive(Clone, Copy, Debug)]
pub struct TransferRow {
    pub id: u64,
    pub account: u64,
    pub amount: i64,
}

/// What the servers hold, and what is wrong with it.
pub struct Audit {
    pub total: i64,
    pub transfers: usize,
    pub violations: Vec<String>,
}

/// Reads every shard directly and checks: the total is unchanged; every account and transfer
/// is on the shard the `mod` function names; every acknowledged transfer exists; and each
/// balance is the start balance minus the transfers out plus the transfers in (so every
/// transfer present was applied to both accounts, and nothing else was).
pub fn audit(bank: &Bank, acked: &HashSet<u64>) -> Audit {
    let accounts = bank.accounts();
    let transfers = bank.transfers();
    let mut violations = Vec::new();
    let total: i64 = accounts.iter().map(|&(_, balance, _)| balance).sum();
    let expected_total = START_BALANCE * ACCOUNTS as i64;
    if total != expected_total {
        violations.push(format!("total {total}, expected {expected_total}"));
    }
    if accounts.len() as u64 != ACCOUNTS {
        violations.push(format!("{} account rows, expected {ACCOUNTS}", accounts.len()));
    }
    let misplaced: Vec<String> = accounts
        .iter()
        .map(|&(id, _, server)| (id, server))
        .chain(transfers.iter().map(|(t, server)| (t.account, *server)))
        .filter(|&(key, server)| shard_of(key) != server)
        .map(|(key, server)| format!("key {key} on s{server}"))
        .collect();
    if !misplaced.is_empty() {
        violations.push(format!("rows on the wrong shard: {}", first_few(&misplaced)));
    }
    let rows: Vec<TransferRow> = transfers.iter().map(|&(t, _)| t).collect();
    let present: HashSet<u64> = rows.iter().map(|t| t.id).collect();
    let mut missing: Vec<u64> = acked.difference(&present).copied().collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        violations.push(format!(
            "{} acknowledged transfers missing: {}",
            missing.len(),
            first_few(&missing)
        ));
    }
    let expected = expected_balances(&rows);
    let wrong: Vec<String> = accounts
        .iter()
        .filter(|&&(id, balance, _)| expected.get(&id) != Some(&balance))
        .map(|&(id, balance, _)| {
            format!(
                "account {id} holds {balance}, its transfers say {:?}",
                expected.get(&id)
            )
        })
        .collect();
    if !wrong.is_empty() {
        violations.push(format!(
            "{} balances disagree with the transfers: {}",
            wrong.len(),
            first_few(&wrong)
        ));
    }
    Audit {
        total,
        transfers: rows.len(),
        violations,
    }
}

/// Each account's balance according to the transfer rows.
pub fn expected_balances(rows: &[TransferRow]) -> BTreeMap<u64, i64> {
    let mut balances: BTreeMap<u64, i64> = (1..=ACCOUNTS).map(|id| (id, START_BALANCE)).collect();
    for t in rows {
        *balances.entry(t.account).or_default() -= t.amount;
        *balances.entry(t.id % ID_STRIDE).or_default() += t.amount;
    }
    balances
}

/// Up to five items of a list, for messages.
pub fn first_few<T: std::fmt::Debug>(items: &[T]) -> String {
    let shown: Vec<String> = items.iter().take(5).map(|i| format!("{i:?}")).collect();
    let more = items.len().saturating_sub(5);
    if more == 0 {
        shown.join(", ")
    } else {
        format!("{} and {more} more", shown.join(", "))
    }
}

/// The shard holding account (or transfer source) `id`: the `mod` function.
pub fn shard_of(id: u64) -> usize {
    (id % SHARDS as u64) as usize
}

#[test]
fn the_audit_credits_the_destination_encoded_in_the_transfer_id() {
    let rows = [
        TransferRow {
            id: 7 * ID_STRIDE + 2,
            account: 1,
            amount: 30,
        },
        TransferRow {
            id: 8 * ID_STRIDE + 1,
            account: 3,
            amount: 5,
        },
    ];
    let expected = expected_balances(&rows);
    assert_eq!(expected[&1], START_BALANCE - 30 + 5);
    assert_eq!(expected[&2], START_BALANCE + 30);
    assert_eq!(expected[&3], START_BALANCE - 5);
    assert_eq!(expected.values().sum::<i64>(), START_BALANCE * ACCOUNTS as i64);
}
