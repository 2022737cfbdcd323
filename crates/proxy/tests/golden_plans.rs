//! Golden plans: every statement in tests/golden/plans.txt with the plan Tessera makes for it
//! over a fixed 4-shard schema, as EXPLAIN ROUTE would show it. A change in planning shows up
//! as a diff of that file, reviewed like code. `TESSERA_BLESS=1 cargo test --test golden_plans`
//! rewrites the file after an intended change.

use tessera_proxy::catalog::{Column, SchemaTables};
use tessera_proxy::route::sharded::cache::PlanCache;
use tessera_proxy::route::sharded::explain;
use tessera_proxy::topology::Topology;

const CONFIG: &str = r#"
[[users]]
name = "app"
password = "app"
[[groups]]
name = "g0"
user = "u"
primary = { address = "127.0.0.1:1" }
[[groups]]
name = "g1"
user = "u"
primary = { address = "127.0.0.1:2" }
[[schemas]]
name = "shop"
shards = ["g0:shop_0", "g0:shop_1", "g1:shop_2", "g1:shop_3"]
[[schemas.tables]]
name = "orders"
shard_key = "customer_id"
[[schemas.tables]]
name = "customers"
shard_key = "id"
[[schemas.tables]]
name = "events"
shard_key = "id"
function = "range"
bounds = [100, 200, 300]
[[schemas.tables]]
name = "tags"
shard_key = "name"
key_type = "string"
[[schemas.tables]]
name = "products"
kind = "broadcast"
[[schemas.tables]]
name = "audit"
kind = "single"
shard = 3
"#;

/// The shop tables' columns (as the differential test creates them, crates/proxy/tests/diff/schema.rs).
const SHOP_COLUMNS: &[(&str, &[&str])] = &[
    (
        "customers",
        &["id", "name", "city", "tier", "balance", "score", "born", "created"],
    ),
    (
        "orders",
        &[
            "id",
            "customer_id",
            "product_id",
            "qty",
            "amount",
            "discount",
            "status",
            "note",
            "ordered_at",
            "ship_date",
        ],
    ),
    ("tags", &["id", "name", "customer_id", "weight", "label"]),
    ("events", &["id", "kind", "customer_id", "value", "amount", "at", "day"]),
    ("products", &["id", "name", "category", "price", "weight", "added"]),
    ("settings", &["k", "v", "n"]),
    ("audit", &["id", "note"]),
];

/// go-tpc's TPC-C tables' columns.
const TPCC_COLUMNS: &[(&str, &[&str])] = &[
    (
        "warehouse",
        &[
            "w_id",
            "w_name",
            "w_street_1",
            "w_street_2",
            "w_city",
            "w_state",
            "w_zip",
            "w_tax",
            "w_ytd",
        ],
    ),
    (
        "district",
        &[
            "d_id",
            "d_w_id",
            "d_name",
            "d_street_1",
            "d_street_2",
            "d_city",
            "d_state",
            "d_zip",
            "d_tax",
            "d_ytd",
            "d_next_o_id",
        ],
    ),
    (
        "customer",
        &[
            "c_id",
            "c_d_id",
            "c_w_id",
            "c_first",
            "c_middle",
            "c_last",
            "c_street_1",
            "c_street_2",
            "c_city",
            "c_state",
            "c_zip",
            "c_phone",
            "c_since",
            "c_credit",
            "c_credit_lim",
            "c_discount",
            "c_balance",
            "c_ytd_payment",
            "c_payment_cnt",
            "c_delivery_cnt",
            "c_data",
        ],
    ),
    (
        "history",
        &[
            "h_c_id", "h_c_d_id", "h_c_w_id", "h_d_id", "h_w_id", "h_date", "h_amount", "h_data",
        ],
    ),
    ("new_order", &["no_o_id", "no_d_id", "no_w_id"]),
    (
        "orders",
        &[
            "o_id",
            "o_d_id",
            "o_w_id",
            "o_c_id",
            "o_entry_d",
            "o_carrier_id",
            "o_ol_cnt",
            "o_all_local",
        ],
    ),
    (
        "order_line",
        &[
            "ol_o_id",
            "ol_d_id",
            "ol_w_id",
            "ol_number",
            "ol_i_id",
            "ol_supply_w_id",
            "ol_delivery_d",
            "ol_quantity",
            "ol_amount",
            "ol_dist_info",
        ],
    ),
    (
        "stock",
        &[
            "s_i_id",
            "s_w_id",
            "s_quantity",
            "s_dist_01",
            "s_dist_02",
            "s_dist_03",
            "s_dist_04",
            "s_dist_05",
            "s_dist_06",
            "s_dist_07",
            "s_dist_08",
            "s_dist_09",
            "s_dist_10",
            "s_ytd",
            "s_order_cnt",
            "s_remote_cnt",
            "s_data",
        ],
    ),
    ("item", &["i_id", "i_im_id", "i_name", "i_price", "i_data"]),
];

/// The table metadata Tessera would read from the shards.
fn tables(schema: &str) -> SchemaTables {
    let columns = if schema == "tpcc" { TPCC_COLUMNS } else { SHOP_COLUMNS };
    let pairs = columns.iter().flat_map(|(t, cols)| {
        cols.iter().map(move |c| {
            let column = Column {
                name: c.to_string(),
                column_type: String::new(),
                key: String::new(),
            };
            (t.to_string(), column)
        })
    });
    SchemaTables::new(schema, 0, pairs)
}

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/plans.txt");

/// go-tpc's TPC-C schema as the benchmark kit shards it: tables by warehouse (mod), item broadcast.
const TPCC_CONFIG: &str = r#"
[[users]]
name = "app"
password = "app"
[[groups]]
name = "g0"
user = "u"
primary = { address = "127.0.0.1:1" }
[[groups]]
name = "g1"
user = "u"
primary = { address = "127.0.0.1:2" }
[[schemas]]
name = "tpcc"
shards = ["g0:tpcc_0", "g0:tpcc_1", "g1:tpcc_2", "g1:tpcc_3"]
[[schemas.tables]]
name = "warehouse"
shard_key = "w_id"
function = "mod"
[[schemas.tables]]
name = "district"
shard_key = "d_w_id"
function = "mod"
[[schemas.tables]]
name = "customer"
shard_key = "c_w_id"
function = "mod"
[[schemas.tables]]
name = "history"
shard_key = "h_w_id"
function = "mod"
[[schemas.tables]]
name = "new_order"
shard_key = "no_w_id"
function = "mod"
[[schemas.tables]]
name = "orders"
shard_key = "o_w_id"
function = "mod"
[[schemas.tables]]
name = "order_line"
shard_key = "ol_w_id"
function = "mod"
[[schemas.tables]]
name = "stock"
shard_key = "s_w_id"
function = "mod"
[[schemas.tables]]
name = "item"
kind = "broadcast"
"#;

/// go-tpc's statements (transactions and `check`), with warehouse 3's values for its `?`.
const TPCC_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/tpcc_plans.txt");

/// The file's statements: lines that are not comments, blank, or indented plan lines.
fn statements(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(' '))
        .map(str::to_string)
        .collect()
}

fn render(config: &str, schema: &str, file: &str) -> String {
    let config = tessera_config::parse_str(config, "golden").expect("golden config");
    let topology = Topology::from_config(&config).expect("golden topology");
    let tables = tables(schema);
    let schema = topology.schema(schema).expect("golden schema");
    let names: Vec<String> = config.groups.iter().map(|g| g.name.clone()).collect();
    let cache = PlanCache::default();
    let current = std::fs::read_to_string(file).expect("golden file");
    let mut out = String::from("# Golden plans (see crates/proxy/tests/golden_plans.rs). Statements start in column 0;\n# the indented lines are the plan: step | shard | group | database | detail.\n");
    for sql in statements(&current) {
        // As a session on the schema plans it: `shop.t.col` written `t.col` first.
        let planned = tessera_sql::drop_database_qualifier(&sql, &schema.name, true).unwrap_or_else(|| sql.clone());
        let fp = tessera_sql::fingerprint(&planned);
        let plan = cache.get(&planned, &fp, schema, true, &tables);
        out.push('\n');
        out.push_str(&sql);
        out.push('\n');
        for row in explain::rows(&plan, schema, &names, &planned, &fp, true) {
            let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
            out.push_str(&format!("    {}\n", cells.join(" | ")));
        }
    }
    out
}

/// Compares `file` with the plans made now (or rewrites it with TESSERA_BLESS=1).
fn check_golden(config: &str, schema: &str, file: &str) {
    let rendered = render(config, schema, file);
    if std::env::var_os("TESSERA_BLESS").is_some() {
        std::fs::write(file, &rendered).expect("write golden file");
        return;
    }
    let current = std::fs::read_to_string(file).expect("golden file");
    if rendered != current {
        let diff: Vec<String> = rendered
            .lines()
            .zip(current.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(10)
            .map(|(i, (a, b))| format!("line {}:\n  planned: {a}\n  file:    {b}", i + 1))
            .collect();
        panic!(
            "plans differ from {file} (TESSERA_BLESS=1 to accept):\n{}",
            diff.join("\n")
        );
    }
}

#[test]
fn plans_match_the_reviewed_file() {
    check_golden(CONFIG, "shop", FILE);
}

#[test]
fn tpcc_plans_match_the_reviewed_file() {
    check_golden(TPCC_CONFIG, "tpcc", TPCC_FILE);
}

/// The sharding differential test's corpus: one statement per line, its markers after the `;`.
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/difftest/corpus.sql");

fn corpus_statements(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with("--"))
        .map(|l| l.rsplit_once(';').map_or(l, |(statement, _)| statement).to_string())
        .collect()
}

/// `sql` with other literals of the same length: the digits of numbers and the ASCII letters
/// of strings moved on by one, digit by digit (`19` -> `20`, `'abz'` -> `'bca'`), and in
/// strings `,` and `;` made `.` and `:`.
fn shifted_literals(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for t in tessera_sql::Lexer::new(sql) {
        let shift = match t.kind {
            tessera_sql::TokenKind::Number => |c: char| match c {
                '0'..='8' => char::from(c as u8 + 1),
                '9' => '0',
                other => other,
            },
            tessera_sql::TokenKind::String => |c: char| match c {
                'a'..='y' | 'A'..='Y' => char::from(c as u8 + 1),
                'z' => 'a',
                'Z' => 'A',
                ',' => '.',
                ';' => ':',
                other => other,
            },
            _ => continue,
        };
        out.push_str(&sql[at..t.offset]);
        out.extend(t.text.chars().map(shift));
        at = t.end();
    }
    out.push_str(&sql[at..]);
    out
}

/// Plans are cached by fingerprint (literals as `?`): a plan made for one statement serves
/// another that differs only in literal values unless the plan depends on them (LIMIT counts,
/// ORDER BY positions, GROUP_CONCAT separators, HAVING constants are kept per value). Every
/// statement of the golden files and the differential corpus, with its literals changed: the
/// plan the warmed cache gives must be the plan made afresh.
#[test]
fn a_cached_plan_serves_other_literals_only_where_they_plan_alike() {
    let sets = [
        (CONFIG, "shop", vec![FILE, CORPUS]),
        (TPCC_CONFIG, "tpcc", vec![TPCC_FILE]),
    ];
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (config, schema, files) in sets {
        let config = tessera_config::parse_str(config, "golden").expect("golden config");
        let topology = Topology::from_config(&config).expect("golden topology");
        let tables = tables(schema);
        let schema = topology.schema(schema).expect("golden schema");
        for file in files {
            let text = std::fs::read_to_string(file).expect("statements");
            let list = if file == CORPUS {
                corpus_statements(&text)
            } else {
                statements(&text)
            };
            for sql in list {
                let variant = shifted_literals(&sql);
                let (fp, variant_fp) = (tessera_sql::fingerprint(&sql), tessera_sql::fingerprint(&variant));
                if variant == sql || fp.key != variant_fp.key {
                    continue;
                }
                let warmed = PlanCache::default();
                warmed.get(&sql, &fp, schema, true, &tables);
                let cached = warmed.get(&variant, &variant_fp, schema, true, &tables);
                let fresh = PlanCache::default().get(&variant, &variant_fp, schema, true, &tables);
                checked += 1;
                if cached != fresh {
                    wrong.push(format!("{sql}\n  then: {variant}"));
                }
            }
        }
    }
    eprintln!("{checked} statements with literals checked");
    assert!(checked > 300, "only {checked} statements with literals");
    assert!(
        wrong.is_empty(),
        "the cached plan of the first statement served the second, which plans otherwise:\n{}",
        wrong.join("\n")
    );
}

/// The route of a statement is its golden plan's step: every statement of the file routes
/// (or fails to) as its plan says, with the plan the cache holds; and a few routes in full.
#[test]
fn routes_run_the_steps_their_plans_show() {
    use tessera_proxy::route::sharded::routed::{route, Reading, Step};
    use tessera_proxy::route::sharded::ShardPlan;
    let config = tessera_config::parse_str(CONFIG, "golden").expect("golden config");
    let topology = Topology::from_config(&config).expect("golden topology");
    let tables = tables("shop");
    let schema = topology.schema("shop").expect("golden schema");
    let cache = PlanCache::default();
    let text = Reading {
        backslash_escapes: true,
        binary: false,
    };
    for sql in statements(&std::fs::read_to_string(FILE).expect("golden file")) {
        let Ok(routed) = route(&sql, schema, &tables, &cache, text) else {
            continue;
        };
        let again = cache.get(&routed.sql, &routed.fp, schema, true, &tables);
        assert!(std::sync::Arc::ptr_eq(&routed.plan, &again), "{sql}: the cached plan");
        let agrees = match (&*routed.plan, &routed.step) {
            (ShardPlan::Reject(m), Step::Refuse(r)) => m == r,
            (ShardPlan::Read { many, .. }, Step::Refuse(_)) => many.is_err(),
            (ShardPlan::Read { .. }, Step::One { write, .. }) => !write,
            (ShardPlan::Read { many, .. }, Step::Scatter { shards, .. }) => many.is_ok() && shards.len() > 1,
            (ShardPlan::Write { .. } | ShardPlan::Insert(_), Step::One { write, .. }) => *write,
            (ShardPlan::Write { .. } | ShardPlan::Insert(_), Step::Write { per_shard, .. }) => per_shard.len() != 1,
            (ShardPlan::Insert(p), Step::InsertGenerated) => p.generated_key.is_some(),
            (ShardPlan::Ddl { shards, .. }, Step::Ddl { shards: s, .. }) => shards == s,
            (ShardPlan::CreateDatabase { .. }, Step::CreateDatabase { .. }) => true,
            _ => false,
        };
        assert!(
            agrees,
            "{sql}: plan {:?} routed as {:?}",
            routed.plan.reason(),
            routed.step
        );
    }
    let step = |sql: &str, binary: bool| {
        let reading = Reading {
            backslash_escapes: true,
            binary,
        };
        route(sql, schema, &tables, &cache, reading).map(|r| r.step)
    };
    let one = step("SELECT name FROM shop.customers WHERE id = 7", false).expect("a key read");
    assert!(
        matches!(&one, Step::One { write: false, sql, .. } if !sql.contains("shop.")),
        "{one:?}"
    );
    let Ok(Step::Scatter { shards, .. }) = step("SELECT name FROM customers WHERE id = 7", true) else {
        panic!("a prepared read goes through the merge even from one shard");
    };
    assert_eq!(shards.len(), 1);
    let Ok(Step::Scatter { shards, sql }) = step("SELECT COUNT(*) FROM customers", false) else {
        panic!("a count over every shard is a scatter");
    };
    assert_eq!(shards, vec![0, 1, 2, 3]);
    assert!(sql.contains("COUNT(*)"), "the shards' statement: {sql}");
    let Ok(Step::Write { per_shard, replicated }) = step("UPDATE customers SET tier = 2", false) else {
        panic!("an update of every row writes every shard");
    };
    assert!(per_shard.len() == 4 && !replicated);
    let Ok(Step::Write { replicated: true, .. }) = step("UPDATE products SET name = 'x'", false) else {
        panic!("a broadcast table's write is replicated");
    };
    assert!(
        step("SELECT SQL_CALC_FOUND_ROWS DISTINCT city FROM customers", false).is_err(),
        "SQL_CALC_FOUND_ROWS over a DISTINCT merge is refused"
    );
}
