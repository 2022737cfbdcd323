//! TPC-C over shards: database `tpcc` over N one-server groups (one shard each), its tables
//! sharded by warehouse with `mod` and `item` broadcast; go-tpc's prepare, run and check through
//! Tessera, beside the same warehouses direct against one server holding all of them.

use std::path::Path;

use crate::error::{BenchError, Result};
use crate::options::{BenchOptions, TpccOptions};
use crate::progress::Progress;
use crate::tessera::{TesseraProcess, TesseraSettings};
use crate::topology::{deploy_shards, sql, Deployment, ShardLayout, Sharding, TableRule};
use crate::tpcc::{locate, GoTpc, HISTORY_INDEX};
use crate::tpcc_bench::{command_line, run_one, title, Probe, TPCC_DB};
use crate::tpcc_check::check_sharded;
use crate::tpcc_report::{render, scaleout_note, xa_note, Section, TpccResult};

/// Groups (= shards) of sharded TPC-C unless `--shard-groups` says otherwise.
pub const TPCC_SHARD_GROUPS: u32 = 4;
/// The function placing warehouses: `w_id % shards` balances warehouses 1..W over the shards.
pub const TPCC_SHARD_FUNCTION: &str = "mod";
/// Every TPC-C table with its warehouse column (`item` has none: broadcast).
pub const WAREHOUSE_COLUMNS: [(&str, &str); 8] = [
    ("warehouse", "w_id"),
    ("district", "d_w_id"),
    ("customer", "c_w_id"),
    ("history", "h_w_id"),
    ("new_order", "no_w_id"),
    ("orders", "o_w_id"),
    ("order_line", "ol_w_id"),
    ("stock", "s_w_id"),
];
/// go-tpc's item count (TPC-C's 100,000), on every shard.
const ITEMS: u64 = 100_000;

/// The `tpcc` schema's rules: the eight warehouse tables by warehouse (mod), `item` broadcast.
pub fn tpcc_rules() -> Vec<TableRule> {
    let mut rules: Vec<TableRule> = WAREHOUSE_COLUMNS
        .iter()
        .map(|(table, column)| TableRule::sharded(table, column, TPCC_SHARD_FUNCTION))
        .collect();
    rules.push(TableRule::broadcast("item"));
    rules
}

/// `groups` groups with one shard each.
pub fn layout(groups: u32) -> ShardLayout {
    ShardLayout {
        groups,
        shards_per_group: 1,
        rules: tpcc_rules(),
    }
}

/// The one line describing the layout in the report.
pub fn describe(groups: u32) -> String {
    format!(
        "{groups} shards (one MariaDB each), tables by warehouse ({TPCC_SHARD_FUNCTION}), item broadcast, through \
         Tessera; direct: one MariaDB with all warehouses"
    )
}

/// Prepares both copies, runs direct and through Tessera, checks through Tessera.
pub fn run(
    opts: &BenchOptions,
    t: &TpccOptions,
    tessera: &TesseraSettings,
    out_dir: &Path,
    progress: &mut Progress,
) -> Result<String> {
    let bin = locate(t.go_tpc.as_deref())?;
    let groups = opts.shard_groups.unwrap_or(TPCC_SHARD_GROUPS);
    let mut deployment = deploy_shards(&layout(groups), &[TPCC_DB])?;
    let go = GoTpc {
        bin: &bin,
        db: TPCC_DB,
        warehouses: t.warehouses,
    };
    let proxy = TesseraProcess::start(tessera, &deployment.backends, out_dir, "tpcc-sharded")?;
    prepare(&go, &deployment, &proxy, t, progress)?;
    let mut intro = vec![describe(groups)];
    if let Some(cap) = opts.cpu_cap {
        intro.extend(deployment.cap_cpu(cap)?);
    }
    let results = measure(&go, &deployment, &proxy, t, progress)?;
    deployment.uncap_cpu();
    progress.starting("tpcc check -> tessera (sharded)");
    let check = check_sharded(&go, &proxy.endpoint);
    progress.finished(30.0);
    let xa = results.iter().find(|r| r.target == "tessera").and_then(|r| r.xa);
    let mut notes = vec![xa_note(xa, t.warehouses, groups)];
    match &check {
        Ok(c) => notes.push(format!("Check: {}.", c.describe())),
        Err(e) => notes.push(format!("Check: {e}")),
    }
    if let Some(cap) = opts.cpu_cap {
        notes.push(scaleout_note(&results, cap, groups, &command_line()));
    }
    let verdict = match &check {
        Ok(c) => c.verdict(),
        Err(_) => "FAILED".to_string(),
    };
    let section = render(&Section {
        title: title(t, &format!("{groups} shards through Tessera vs one MariaDB direct")),
        intro,
        results: &results,
        check: &verdict,
        notes,
        commands: &commands(&go, &deployment.direct, &proxy, t),
    });
    // A failed check keeps the measured tables: the error carries the whole section.
    match check {
        Ok(c) if c.ok() => Ok(section),
        _ => Err(BenchError::TpccCheck {
            target: "tessera (sharded)".into(),
            output: section,
        }),
    }
}

/// go-tpc's prepare directly into the one server and through Tessera into the shards, the
/// history index on both, and the placement check on the shards.
fn prepare(
    go: &GoTpc,
    deployment: &Deployment,
    proxy: &TesseraProcess,
    t: &TpccOptions,
    progress: &mut Progress,
) -> Result<()> {
    let sharding = deployment
        .backends
        .sharding
        .as_ref()
        .ok_or_else(|| BenchError::Usage("sharded TPC-C needs the sharded layout".into()))?;
    let w = t.warehouses;
    progress.starting(&format!("tpcc prepare {w} warehouses (direct, one server)"));
    go.prepare(&deployment.direct, t.threads)?;
    sql(&deployment.direct, &format!("USE `{TPCC_DB}`; {HISTORY_INDEX}"))?;
    progress.finished(30.0 * f64::from(w));
    let shards = sharding.groups.len();
    progress.starting(&format!(
        "tpcc prepare {w} warehouses through Tessera ({shards} shards)"
    ));
    go.prepare(&proxy.endpoint, t.threads)?;
    sql(&proxy.endpoint, &format!("USE `{TPCC_DB}`; {HISTORY_INDEX}"))?;
    check_placement(sharding, w)?;
    progress.finished(30.0 * f64::from(w));
    Ok(())
}

/// The measured runs: direct against the one server, then through Tessera over the shards.
fn measure(
    go: &GoTpc,
    deployment: &Deployment,
    proxy: &TesseraProcess,
    t: &TpccOptions,
    progress: &mut Progress,
) -> Result<Vec<TpccResult>> {
    // server_pids: the direct server first, then one per group.
    let (direct_pid, shard_pids) = deployment
        .server_pids
        .split_first()
        .map_or((&[][..], &[][..]), |(d, s)| (std::slice::from_ref(d), s));
    let direct = Probe {
        proxy_pid: None,
        server_pids: direct_pid,
        admin: None,
    };
    let sharded = Probe {
        proxy_pid: Some(proxy.pid()),
        server_pids: shard_pids,
        admin: Some(&proxy.admin),
    };
    let mut results = Vec::new();
    for (name, endpoint, probe) in [
        ("direct", &deployment.direct, direct),
        ("tessera", &proxy.endpoint, sharded),
    ] {
        progress.starting(&format!(
            "tpcc run {}s, {} threads -> {name} (sharded layout)",
            t.seconds, t.threads
        ));
        results.push(run_one(go, name, endpoint, &probe, t)?);
        progress.finished(f64::from(t.seconds));
    }
    Ok(results)
}

fn commands(go: &GoTpc, direct: &crate::sysbench::Endpoint, proxy: &TesseraProcess, t: &TpccOptions) -> Vec<String> {
    let run = format!("--time {}s run", t.seconds);
    vec![
        go.shown(direct, t.threads, "prepare --no-check"),
        format!("{HISTORY_INDEX}  (direct, database {TPCC_DB})"),
        go.shown(&proxy.endpoint, t.threads, "prepare --no-check"),
        format!("{HISTORY_INDEX}  (through Tessera, database {TPCC_DB}: on every shard)"),
        go.shown(direct, t.threads, &run),
        go.shown(&proxy.endpoint, t.threads, &run),
        go.shown(
            &proxy.endpoint,
            t.warehouses,
            "check  (repeated until every pair is covered)",
        ),
        format!("Tessera config: {}", proxy.config_path.display()),
    ]
}

/// The SQL counting, on shard `shard` of `shards` (database `db`), each warehouse table's rows and
/// those not on this shard, and the items.
pub fn placement_query(db: &str, shard: usize, shards: usize) -> String {
    let mut parts: Vec<String> = WAREHOUSE_COLUMNS
        .iter()
        .map(|(table, col)| {
            format!(
                "SELECT '{table}', COUNT(*), COALESCE(SUM(MOD({col}, {shards}) <> {shard}), 0) FROM `{db}`.`{table}`"
            )
        })
        .collect();
    parts.push(format!("SELECT 'item', COUNT(*), 0 FROM `{db}`.`item`"));
    parts.join(" UNION ALL ")
}

/// Checks on the shards themselves what go-tpc loaded through Tessera: every warehouse row on
/// shard `w_id % shards`, all W warehouses and W x 100,000 stock rows over the shards, and the
/// whole `item` table on every shard.
pub fn check_placement(sharding: &Sharding, warehouses: u32) -> Result<()> {
    let shards = sharding.shards();
    let (mut warehouse_rows, mut stock_rows) = (0u64, 0u64);
    for (shard, (group, db)) in shards.iter().enumerate() {
        let server = sharding
            .groups
            .get(*group)
            .ok_or_else(|| BenchError::ShardCheck(format!("no group {group}")))?;
        let out = sql(server, &placement_query(db, shard, shards.len()))
            .map_err(|e| BenchError::ShardCheck(format!("counting the rows of {db} on g{group}: {e}")))?;
        for row in out.lines().map(parse_row) {
            let (table, count, misplaced) = row.ok_or_else(|| BenchError::ShardCheck(format!("{db}: {out:?}")))?;
            check_row(db, &table, count, misplaced)?;
            match table.as_str() {
                "warehouse" => warehouse_rows += count,
                "stock" => stock_rows += count,
                _ => {}
            }
        }
    }
    let w = u64::from(warehouses);
    if warehouse_rows != w || stock_rows != w * ITEMS {
        return Err(BenchError::ShardCheck(format!(
            "the shards hold {warehouse_rows} warehouses and {stock_rows} stock rows, not {w} and {}",
            w * ITEMS
        )));
    }
    Ok(())
}

fn check_row(db: &str, table: &str, count: u64, misplaced: u64) -> Result<()> {
    if misplaced > 0 {
        return Err(BenchError::ShardCheck(format!(
            "{db}.{table}: {misplaced} of {count} rows belong on other shards"
        )));
    }
    if table == "item" && count != ITEMS {
        return Err(BenchError::ShardCheck(format!(
            "{db}.item has {count} rows, not {ITEMS} (a broadcast table is whole on every shard)"
        )));
    }
    Ok(())
}

/// `"stock\t100000\t0"` -> ("stock", 100000, 0).
fn parse_row(line: &str) -> Option<(String, u64, u64)> {
    let mut f = line.split('\t');
    let table = f.next()?.trim().to_string();
    Some((table, f.next()?.trim().parse().ok()?, f.next()?.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysbench::Endpoint;
    use crate::tessera::config_text;
    use crate::topology::Backends;

    fn backends(groups: u16) -> Backends {
        let endpoint = |port| Endpoint {
            host: "127.0.0.1".into(),
            port,
            user: "tessera".into(),
            password: "tessera".into(),
        };
        Backends {
            primary: "127.0.0.1:5000".into(),
            primary_weight: None,
            replicas: Vec::new(),
            user: "tessera".into(),
            password: "tessera".into(),
            sharding: Some(Sharding {
                schema: TPCC_DB.into(),
                groups: (0..groups).map(|g| endpoint(5000 + g)).collect(),
                shards_per_group: 1,
                rules: tpcc_rules(),
            }),
        }
    }

    #[test]
    fn tpcc_config_shards_by_warehouse_and_broadcasts_item() {
        let settings = TesseraSettings {
            bin: "tessera".into(),
            workers: 1,
            pool_max: 64,
            consistency: None,
        };
        let text = config_text(&settings, &backends(4), 6033, 9090);
        assert!(
            text.contains(r#"shards = ["g0:tpcc_0", "g1:tpcc_1", "g2:tpcc_2", "g3:tpcc_3"]"#),
            "{text}"
        );
        assert!(
            text.contains("[[schemas.tables]]\nname = \"order_line\"\nshard_key = \"ol_w_id\"\nfunction = \"mod\"\n"),
            "{text}"
        );
        assert!(
            text.contains("[[schemas.tables]]\nname = \"item\"\nkind = \"broadcast\"\n"),
            "{text}"
        );
        assert!(!text.contains("auto_increment"), "{text}");
        let config = tessera_config::parse_str(&text, "generated").expect("a valid config");
        assert_eq!(config.groups.len(), 4);
        assert_eq!(tpcc_rules().len(), 9);
    }

    #[test]
    fn placement_query_counts_misplaced_rows_per_table() {
        let q = placement_query("tpcc_1", 1, 4);
        assert!(
            q.starts_with(
                "SELECT 'warehouse', COUNT(*), COALESCE(SUM(MOD(w_id, 4) <> 1), 0) FROM `tpcc_1`.`warehouse` UNION ALL"
            ),
            "{q}"
        );
        assert!(q.ends_with("SELECT 'item', COUNT(*), 0 FROM `tpcc_1`.`item`"), "{q}");
        assert_eq!(q.matches("UNION ALL").count(), 8);
    }

    #[test]
    fn placement_rows_parse_and_misplaced_rows_fail() {
        assert_eq!(parse_row("stock\t100000\t0"), Some(("stock".into(), 100_000, 0)));
        assert_eq!(parse_row("stock\tNULL\t0"), None);
        assert!(check_row("tpcc_0", "stock", 100_000, 0).is_ok());
        assert!(check_row("tpcc_0", "stock", 100_000, 3).is_err());
        assert!(check_row("tpcc_0", "item", 99_999, 0).is_err());
    }

    #[test]
    fn layout_has_one_shard_per_group() {
        let l = layout(4);
        assert_eq!((l.groups, l.shards_per_group), (4, 1));
        assert!(describe(4).starts_with("4 shards (one MariaDB each), tables by warehouse (mod)"));
    }
}
