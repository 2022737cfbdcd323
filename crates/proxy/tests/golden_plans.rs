//! Golden plans: every statement in tests/golden/plans.txt with the plan Tessera makes for it
//! over a fixed 4-shard schema, as EXPLAIN ROUTE would show it. A change in planning shows up
//! as a diff of that file, reviewed like code. `TESSERA_BLESS=1 cargo test --test golden_plans`
//! rewrites the file after an intended change.

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

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/plans.txt");

/// The file's statements: lines that are not comments, blank, or indented plan lines.
fn statements(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(' '))
        .map(str::to_string)
        .collect()
}

fn render() -> String {
    let config = tessera_config::parse_str(CONFIG, "golden").expect("golden config");
    let topology = Topology::from_config(&config).expect("golden topology");
    let schema = topology.schema("shop").expect("shop");
    let names: Vec<String> = config.groups.iter().map(|g| g.name.clone()).collect();
    let cache = PlanCache::default();
    let current = std::fs::read_to_string(FILE).expect("tests/golden/plans.txt");
    let mut out = String::from("# Golden plans (see crates/proxy/tests/golden_plans.rs). Statements start in column 0;\n# the indented lines are the plan: step | shard | group | database | detail.\n");
    for sql in statements(&current) {
        let fp = tessera_sql::fingerprint(&sql);
        let plan = cache.get(&sql, &fp, schema);
        out.push('\n');
        out.push_str(&sql);
        out.push('\n');
        for row in explain::rows(&plan, schema, &names, &sql, &fp) {
            let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("-")).collect();
            out.push_str(&format!("    {}\n", cells.join(" | ")));
        }
    }
    out
}

#[test]
fn plans_match_the_reviewed_file() {
    let rendered = render();
    if std::env::var_os("TESSERA_BLESS").is_some() {
        std::fs::write(FILE, &rendered).expect("write golden file");
        return;
    }
    let current = std::fs::read_to_string(FILE).expect("tests/golden/plans.txt");
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
            "plans differ from tests/golden/plans.txt (TESSERA_BLESS=1 to accept):\n{}",
            diff.join("\n")
        );
    }
}
