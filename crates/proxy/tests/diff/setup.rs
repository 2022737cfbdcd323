//! The test topology: one sandbox with three MariaDB servers (s0 = group g0 with shop_0 and
//! shop_1, s1 = group g1 with shop_2 and shop_3, s2 = the reference with `shop`), the data
//! loaded directly (without Tessera), and either Tessera in front of the groups or, in
//! self-check mode, a union copy of the shards in `shop` on s0 standing in for it.

use super::compare::multiset_diff;
use super::data::{quote, Dataset};
use super::schema::{self, Rule, Table, SCHEMA, SHARDS};
use super::side::Side;
use tessera_proxy::server::{start, Running};
use tessera_sandbox::{Sandbox, SandboxOptions};

/// What answers the statements the reference answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Tessera over the sharded groups (the real test).
    Tessera,
    /// A plain copy of the shards' union (no secondary indexes, other insertion order): checks
    /// the loader, the corpus markers and the comparison itself.
    SelfCheck,
}

/// Sandbox server of the reference.
const REFERENCE_SERVER: usize = 2;
/// Rows per INSERT when copying text rows.
const COPY_BATCH: usize = 200;

/// Servers, data and (in Tessera mode) the proxy.
pub struct Topology {
    pub sandbox: Sandbox,
    pub proxy: Option<Running>,
    pub mode: Mode,
}

impl Topology {
    /// Starts the servers, loads `data` into the reference and the shards, then starts Tessera
    /// or builds the union copy.
    pub async fn start(mode: Mode, data: &Dataset) -> Topology {
        let sandbox = tokio::task::spawn_blocking(|| {
            Sandbox::start(SandboxOptions {
                servers: 3,
                ..SandboxOptions::default()
            })
            .expect("a sandbox of three servers starts")
        })
        .await
        .expect("sandbox thread");
        let mut topo = Topology {
            sandbox,
            proxy: None,
            mode,
        };
        topo.load_reference(data).await;
        topo.load_shards(data).await;
        match mode {
            Mode::Tessera => {
                let config = tessera_config::parse_str(&topo.tessera_config(), "sharding_diff")
                    .expect("the sharding test configuration parses (does tessera-config know [[schemas]] yet?)");
                topo.proxy = Some(start(config).await.expect("Tessera starts"));
            }
            Mode::SelfCheck => topo.build_union_copy().await,
        }
        topo
    }

    fn port(&self, server: usize) -> u16 {
        self.sandbox.server(server).port()
    }

    /// The reference MariaDB, logged into `shop`.
    pub fn reference(&self) -> Side {
        Side::admin("reference", self.port(REFERENCE_SERVER), Some(SCHEMA))
    }

    /// The side under test, logged into `shop`: Tessera, or the union copy.
    pub fn under_test(&self) -> Side {
        match &self.proxy {
            Some(p) => Side::new("tessera", p.addr.port(), "app", "app", Some(SCHEMA)),
            None => Side::admin("union copy", self.port(0), Some(SCHEMA)),
        }
    }

    /// Shard i's database, directly.
    pub fn shard(&self, i: usize) -> Side {
        Side::admin(
            &format!("shard {i}"),
            self.port(schema::shard_server(i)),
            Some(&schema::shard_db(i)),
        )
    }

    /// Tessera's configuration for this sandbox (the topology of tests/difftest/README.md).
    pub fn tessera_config(&self) -> String {
        format!(
            r#"
[server]
listen = "127.0.0.1:0"
[[users]]
name = "app"
password = "app"
[[groups]]
name = "g0"
user = "tessera"
password = "tessera"
primary = {{ address = "127.0.0.1:{g0}" }}
[[groups]]
name = "g1"
user = "tessera"
password = "tessera"
primary = {{ address = "127.0.0.1:{g1}" }}
[[schemas]]
name = "shop"
shards = ["g0:shop_0", "g0:shop_1", "g1:shop_2", "g1:shop_3"]
default_shard = 0
[[schemas.tables]]
name = "orders"
shard_key = "customer_id"
function = "hash"
[[schemas.tables]]
name = "customers"
shard_key = "id"
function = "hash"
[[schemas.tables]]
name = "tags"
shard_key = "name"
function = "hash"
key_type = "string"
[[schemas.tables]]
name = "events"
shard_key = "id"
function = "range"
bounds = [{b0}, {b1}, {b2}]
[[schemas.tables]]
name = "products"
kind = "broadcast"
"#,
            g0 = self.port(0),
            g1 = self.port(1),
            b0 = schema::EVENT_BOUNDS[0],
            b1 = schema::EVENT_BOUNDS[1],
            b2 = schema::EVENT_BOUNDS[2],
        )
    }

    async fn load_reference(&self, data: &Dataset) {
        let mut server = Side::admin("reference", self.port(REFERENCE_SERVER), None);
        server.must(&format!("CREATE DATABASE {SCHEMA}")).await;
        for td in &data.tables {
            let qualified = format!("{SCHEMA}.{}", td.table.name);
            server.must(&td.table.ddl(&qualified, true)).await;
            for insert in td.inserts(&qualified) {
                server.must(&insert).await;
            }
        }
    }

    /// Every shard gets every row, then deletes those its shard function places elsewhere.
    async fn load_shards(&self, data: &Dataset) {
        for i in 0..SHARDS {
            let db = schema::shard_db(i);
            let mut server = Side::admin(&format!("shard {i}"), self.port(schema::shard_server(i)), None);
            server.must(&format!("CREATE DATABASE {db}")).await;
            for td in data.tables.iter().filter(|td| td.table.on_shard(i)) {
                let qualified = format!("{db}.{}", td.table.name);
                server.must(&td.table.ddl(&qualified, true)).await;
                for insert in td.inserts(&qualified) {
                    server.must(&insert).await;
                }
                if let Some(delete) = misplaced_delete(td.table, &qualified, i) {
                    server.must(&delete).await;
                }
            }
        }
    }

    /// `shop` on s0: the shards' rows (shard 3 first; broadcast and unsharded tables from shard
    /// 0), tables without secondary indexes.
    async fn build_union_copy(&self) {
        let mut copy = Side::admin("union copy", self.port(0), None);
        copy.must(&format!("CREATE DATABASE {SCHEMA}")).await;
        for table in schema::TABLES.iter() {
            let qualified = format!("{SCHEMA}.{}", table.name);
            copy.must(&table.ddl(&qualified, false)).await;
            for i in (0..SHARDS).rev() {
                let copies_of_all = matches!(table.rule, Rule::Broadcast | Rule::Unsharded);
                if !table.on_shard(i) || copies_of_all && i != 0 {
                    continue;
                }
                let rows = self.shard(i).rows(&table.dump_sql(table.name)).await;
                insert_text_rows(&mut copy, &qualified, &rows).await;
            }
        }
    }

    /// Rows of every shard per table, e.g. "orders 612/590/601/597" (unsharded: shard 0 only).
    pub async fn distribution(&self) -> Vec<String> {
        let mut out = Vec::new();
        for table in schema::TABLES.iter() {
            let mut counts = Vec::new();
            for i in (0..SHARDS).filter(|&i| table.on_shard(i)) {
                let rows = self
                    .shard(i)
                    .rows(&format!("SELECT COUNT(*) FROM {}", table.name))
                    .await;
                counts.push(rows[0][0].clone().unwrap_or_default());
            }
            out.push(format!("{} {}", table.name, counts.join("/")));
        }
        out
    }

    /// Problems found comparing the reference's tables `names` with the shards: the union of a
    /// sharded table's shards must equal the reference with every row on its own shard; every
    /// shard's copy of a broadcast table, and shard 0's unsharded tables, must equal it.
    pub async fn check_shards(&self, names: &[String]) -> Vec<String> {
        let mut problems = Vec::new();
        for table in tables(names) {
            let reference = self.reference().rows(&table.dump_sql(table.name)).await;
            let mut union = Vec::new();
            for i in (0..SHARDS).filter(|&i| table.on_shard(i)) {
                let mut shard = self.shard(i);
                let rows = shard.rows(&table.dump_sql(table.name)).await;
                if matches!(table.rule, Rule::Broadcast | Rule::Unsharded) {
                    if let Some(d) = sorted_diff(&reference, &rows) {
                        problems.push(format!("{} on shard {i}: {d}", table.name));
                    }
                    continue;
                }
                let misplaced = shard.rows(&misplaced_select(table, i)).await;
                if !misplaced.is_empty() {
                    let keys: Vec<String> = misplaced.iter().map(|r| r[0].clone().unwrap_or_default()).collect();
                    problems.push(format!(
                        "{} on shard {i}: rows of other shards, {} = {keys:?}",
                        table.name, table.pk
                    ));
                }
                union.extend(rows);
            }
            if table.shard_expr().is_some() {
                let mut expected = reference;
                expected.sort();
                union.sort();
                if let Some(d) = multiset_diff(&expected, &union) {
                    problems.push(format!("{} (union of the shards): {d}", table.name));
                }
            }
        }
        problems
    }

    /// Problems found comparing the reference's tables `names` with the side under test's
    /// (the union copy in self-check mode), both read in primary key order.
    pub async fn check_copy(&self, names: &[String]) -> Vec<String> {
        let mut problems = Vec::new();
        for table in tables(names) {
            let sql = table.dump_sql(table.name);
            let (reference, copy) = (self.reference().rows(&sql).await, self.under_test().rows(&sql).await);
            if let Some(d) = sorted_diff(&reference, &copy) {
                problems.push(format!("{}: {d}", table.name));
            }
        }
        problems
    }

    /// The tables as the checks of this mode see them after a write.
    pub async fn check_after_write(&self, names: &[String]) -> Vec<String> {
        match self.mode {
            Mode::Tessera => self.check_shards(names).await,
            Mode::SelfCheck => self.check_copy(names).await,
        }
    }

    /// Makes table `name` equal the reference again on the side under test (after a failed
    /// write check), so that one wrong write does not fail every later statement.
    pub async fn resync(&self, name: &str) {
        let Some(table) = schema::table(name) else {
            return;
        };
        let rows = self.reference().rows(&table.dump_sql(table.name)).await;
        match self.mode {
            Mode::SelfCheck => {
                let mut copy = self.under_test();
                copy.must(&format!("DELETE FROM {}", table.name)).await;
                insert_text_rows(&mut copy, table.name, &rows).await;
            }
            Mode::Tessera => {
                for i in (0..SHARDS).filter(|&i| table.on_shard(i)) {
                    let mut shard = self.shard(i);
                    shard.must(&format!("DELETE FROM {}", table.name)).await;
                    insert_text_rows(&mut shard, table.name, &rows).await;
                    if let Some(delete) = misplaced_delete(table, table.name, i) {
                        shard.must(&delete).await;
                    }
                }
            }
        }
    }
}

/// [`multiset_diff`] of two row lists in any order.
fn sorted_diff(a: &[Vec<Option<String>>], b: &[Vec<Option<String>>]) -> Option<String> {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort();
    b.sort();
    multiset_diff(&a, &b)
}

/// The schema tables among `names` (unknown names are ignored).
fn tables(names: &[String]) -> Vec<&'static Table> {
    names.iter().filter_map(|n| schema::table(n)).collect()
}

/// `DELETE` of the rows shard `i` must not hold (None for broadcast tables).
fn misplaced_delete(table: &Table, qualified: &str, i: usize) -> Option<String> {
    let expr = table.shard_expr()?;
    Some(format!("DELETE FROM {qualified} WHERE NOT (({expr}) <=> {i})"))
}

/// Primary keys of the rows of shard `i` that belong to another shard.
fn misplaced_select(table: &Table, i: usize) -> String {
    let expr = table.shard_expr().expect("a sharded table");
    format!("SELECT `{}` FROM {} WHERE NOT (({expr}) <=> {i})", table.pk, table.name)
}

/// Inserts text rows (as read with the text protocol) into `qualified`, every value quoted.
async fn insert_text_rows(side: &mut Side, qualified: &str, rows: &[Vec<Option<String>>]) {
    for chunk in rows.chunks(COPY_BATCH) {
        let values: Vec<String> = chunk
            .iter()
            .map(|r| {
                let cells: Vec<String> = r.iter().map(|v| v.as_deref().map_or("NULL".into(), quote)).collect();
                format!("({})", cells.join(","))
            })
            .collect();
        side.must(&format!("INSERT INTO {qualified} VALUES {}", values.join(",")))
            .await;
    }
}
