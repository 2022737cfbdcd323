//! The sharding topology snapshot: logical schemas, their shards (group + database) and table rules.
//!
//! Built once from a configuration ([`Topology::from_config`]) and never changed: the proxy
//! holds it in an `Arc` and swaps in a new one when the configuration changes. Group names are
//! resolved to indices in `config.groups` order; an unknown group is an error, never a fallback.
//! Schema and table names are compared case-sensitively (MariaDB on Linux with the default
//! `lower_case_table_names = 0`), column names case-insensitively.

pub mod shard_fn;

use crate::topology::shard_fn::{KeyValue, ListError, ListFunction, ShardFunction};
use std::collections::HashMap;
use tessera_config::{
    split_shard_entry, validate_schemas, Config, ConfigError, FunctionKind, ListValue, SchemaConfig, TableConfig,
    TableKind,
};
use thiserror::Error;

/// Why a configuration cannot make a topology.
#[derive(Debug, Error)]
pub enum TopologyError {
    /// The `[[schemas]]` section fails validation (the error names the key and the fix).
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    #[error("schema `{schema}`: shard {shard} (`{entry}`) is not \"group:database\"")]
    MalformedShard {
        schema: String,
        shard: usize,
        entry: String,
    },
    #[error("schema `{schema}`: shard {shard} (`{entry}`) names the unknown group `{group}`")]
    UnknownGroup {
        schema: String,
        shard: usize,
        entry: String,
        group: String,
    },
    #[error("schema `{schema}`, table `{table}`: `{key}` is missing")]
    Missing {
        schema: String,
        table: String,
        key: &'static str,
    },
    #[error("schema `{schema}`, table `{table}`: {source}")]
    List {
        schema: String,
        table: String,
        source: ListError,
    },
}

/// Every sharded schema; immutable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topology {
    pub schemas: Vec<ShardedSchema>,
}

impl Topology {
    /// Validates the `[[schemas]]` of `config` and resolves them.
    pub fn from_config(config: &Config) -> Result<Topology, TopologyError> {
        validate_schemas(config, "configuration")?;
        let group_names: Vec<&str> = config.groups.iter().map(|g| g.name.as_str()).collect();
        let schemas = config
            .schemas
            .iter()
            .map(|s| ShardedSchema::build(s, &group_names))
            .collect::<Result<_, _>>()?;
        Ok(Topology { schemas })
    }

    /// The schema named exactly `name` (case-sensitive).
    pub fn schema(&self, name: &str) -> Option<&ShardedSchema> {
        self.schemas.iter().find(|s| s.name == name)
    }

    /// No schema is sharded.
    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }
}

/// One logical database split over shards.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardedSchema {
    /// The database name clients use.
    pub name: String,
    /// Logical shard `i` is `shards[i]`.
    pub shards: Vec<Shard>,
    /// The shard of tables no rule names.
    pub default_shard: usize,
    rules: Rules,
}

/// Where one logical shard lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Index into the configured groups.
    pub group: usize,
    /// The physical database on that group.
    pub database: String,
}

/// Where a table's rows are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TablePlacement<'a> {
    /// Spread by a shard function.
    Sharded(&'a ShardedTable),
    /// A full copy on every shard.
    Broadcast,
    /// Whole on this shard.
    Single(usize),
}

/// A sharded table's key column and function.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardedTable {
    /// The shard key column (compare with [`ShardedTable::is_key`]: case-insensitive).
    pub key: String,
    pub function: ShardFunction,
    /// The key is AUTO_INCREMENT: rows without it get values from Tessera's sequence.
    pub auto_increment: bool,
}

impl ShardedTable {
    /// `column` names the shard key (column names are case-insensitive in MariaDB).
    pub fn is_key(&self, column: &str) -> bool {
        let lower = |s: &str| s.chars().flat_map(char::to_lowercase).collect::<String>();
        self.key.eq_ignore_ascii_case(column) || lower(&self.key) == lower(column)
    }
}

/// Table rules: exact names first, then the longest matching prefix.
#[derive(Debug, Clone, Default, PartialEq)]
struct Rules {
    exact: HashMap<String, Rule>,
    /// Longest prefix first.
    prefixes: Vec<(String, Rule)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Rule {
    Sharded(ShardedTable),
    Broadcast,
    Single(usize),
}

impl ShardedSchema {
    /// The placement of table `name` (case-sensitive): its exact rule, else the rule of the
    /// longest matching `prefix*`, else the default shard.
    pub fn table(&self, name: &str) -> TablePlacement<'_> {
        let rule = self.rules.exact.get(name).or_else(|| {
            let mut prefixes = self.rules.prefixes.iter();
            prefixes.find(|(p, _)| name.starts_with(p.as_str())).map(|(_, r)| r)
        });
        match rule {
            Some(Rule::Sharded(t)) => TablePlacement::Sharded(t),
            Some(Rule::Broadcast) => TablePlacement::Broadcast,
            Some(Rule::Single(shard)) => TablePlacement::Single(*shard),
            None => TablePlacement::Single(self.default_shard),
        }
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    fn build(config: &SchemaConfig, group_names: &[&str]) -> Result<ShardedSchema, TopologyError> {
        let shards = config
            .shards
            .iter()
            .enumerate()
            .map(|(i, entry)| resolve_shard(&config.name, i, entry, group_names))
            .collect::<Result<_, _>>()?;
        let mut rules = Rules::default();
        for table in &config.tables {
            let rule = build_rule(config, table)?;
            match table.pattern() {
                (prefix, true) => rules.prefixes.push((prefix.to_string(), rule)),
                (name, false) => {
                    rules.exact.insert(name.to_string(), rule);
                }
            }
        }
        rules.prefixes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        Ok(ShardedSchema {
            name: config.name.clone(),
            shards,
            default_shard: config.default_shard,
            rules,
        })
    }
}

/// `"group:database"` -> the group's index and the database.
fn resolve_shard(schema: &str, shard: usize, entry: &str, group_names: &[&str]) -> Result<Shard, TopologyError> {
    let (group, database) = split_shard_entry(entry).ok_or_else(|| TopologyError::MalformedShard {
        schema: schema.to_string(),
        shard,
        entry: entry.to_string(),
    })?;
    let index = group_names
        .iter()
        .position(|g| *g == group)
        .ok_or_else(|| TopologyError::UnknownGroup {
            schema: schema.to_string(),
            shard,
            entry: entry.to_string(),
            group: group.to_string(),
        })?;
    Ok(Shard {
        group: index,
        database: database.to_string(),
    })
}

fn build_rule(schema: &SchemaConfig, table: &TableConfig) -> Result<Rule, TopologyError> {
    Ok(match table.kind {
        TableKind::Broadcast => Rule::Broadcast,
        TableKind::Single => Rule::Single(table.shard.unwrap_or(schema.default_shard)),
        TableKind::Sharded => Rule::Sharded(ShardedTable {
            key: table
                .shard_key
                .clone()
                .ok_or_else(|| missing(schema, table, "shard_key"))?,
            function: build_function(schema, table)?,
            auto_increment: table.auto_increment,
        }),
    })
}

fn missing(schema: &SchemaConfig, table: &TableConfig, key: &'static str) -> TopologyError {
    TopologyError::Missing {
        schema: schema.name.clone(),
        table: table.name.clone(),
        key,
    }
}

fn build_function(schema: &SchemaConfig, t: &TableConfig) -> Result<ShardFunction, TopologyError> {
    Ok(match t.function() {
        FunctionKind::Hash => ShardFunction::Hash { key_type: t.key_type() },
        FunctionKind::Mod => ShardFunction::Mod,
        FunctionKind::Range => {
            let bounds = t.bounds.as_ref().ok_or_else(|| missing(schema, t, "bounds"))?;
            ShardFunction::Range {
                bounds: bounds.iter().map(|&b| i128::from(b)).collect(),
            }
        }
        FunctionKind::List => {
            let lists = t.lists.as_ref().ok_or_else(|| missing(schema, t, "lists"))?;
            let lists: Vec<Vec<KeyValue>> = lists.iter().map(|l| key_values(l)).collect();
            let list = ListFunction::new(t.key_type(), &lists).map_err(|source| TopologyError::List {
                schema: schema.name.clone(),
                table: t.name.clone(),
                source,
            })?;
            ShardFunction::List(list)
        }
        FunctionKind::Date => ShardFunction::Date {
            unit: t.unit.ok_or_else(|| missing(schema, t, "unit"))?,
        },
    })
}

fn key_values(list: &[ListValue]) -> Vec<KeyValue> {
    list.iter()
        .map(|v| match v {
            ListValue::Int(i) => KeyValue::Int(i128::from(*i)),
            ListValue::Str(s) => KeyValue::Str(s.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::shard_fn::KeyType;
    use tessera_config::parse_str;

    const BASE: &str = r#"
        [[users]]
        name = "app"
        password = "app"
        [[groups]]
        name = "g0"
        user = "tessera"
        primary = { address = "127.0.0.1:3306" }
        [[groups]]
        name = "g1"
        user = "tessera"
        primary = { address = "127.0.0.1:3307" }
    "#;

    const SHOP: &str = r#"
        [[schemas]]
        name = "shop"
        shards = ["g1:shop_0", "g0:shop_1", "g1:shop_2", "g0:shop_3"]
        default_shard = 2
        [[schemas.tables]]
        name = "orders"
        shard_key = "Customer_ID"
        [[schemas.tables]]
        name = "sbtest*"
        shard_key = "id"
        function = "range"
        bounds = [10, 20, 30]
        [[schemas.tables]]
        name = "sbtest_big*"
        shard_key = "id"
        function = "mod"
        [[schemas.tables]]
        name = "sbtest_big_1"
        kind = "broadcast"
        [[schemas.tables]]
        name = "regions"
        shard_key = "code"
        function = "list"
        key_type = "string"
        lists = [["DE"], ["fr"], [], ["it", 'es ']]
        [[schemas.tables]]
        name = "events"
        shard_key = "day"
        function = "date"
        unit = "day"
        [[schemas.tables]]
        name = "audit"
        kind = "single"
        [[schemas.tables]]
        name = "archive"
        kind = "single"
        shard = 3
        [[schemas]]
        name = "Logs"
        shards = ["g0:logs"]
    "#;

    fn topology(text: &str) -> Topology {
        let config = parse_str(&format!("{BASE}{text}"), "t").expect("valid config");
        Topology::from_config(&config).expect("topology")
    }

    #[test]
    fn shards_resolve_to_group_indices_in_config_order() {
        let t = topology(SHOP);
        let shop = t.schema("shop").expect("shop");
        let groups: Vec<(usize, &str)> = shop.shards.iter().map(|s| (s.group, s.database.as_str())).collect();
        assert_eq!(groups, [(1, "shop_0"), (0, "shop_1"), (1, "shop_2"), (0, "shop_3")]);
        assert_eq!((shop.shard_count(), shop.default_shard), (4, 2));
        assert_eq!(
            t.schema("Logs").map(|s| s.shards.clone()),
            Some(vec![Shard {
                group: 0,
                database: "logs".into()
            }])
        );
        assert!(
            t.schema("logs").is_none() && t.schema("SHOP").is_none(),
            "schema names are case-sensitive"
        );
        assert!(!t.is_empty());
        assert!(topology("").is_empty());
    }

    #[test]
    fn tables_match_exactly_then_by_longest_prefix_then_default() {
        let t = topology(SHOP);
        let shop = t.schema("shop").expect("shop");
        let TablePlacement::Sharded(orders) = shop.table("orders") else {
            panic!("orders is sharded")
        };
        assert_eq!(orders.function, ShardFunction::Hash { key_type: KeyType::Int });
        assert!(orders.is_key("customer_id") && orders.is_key("CUSTOMER_ID") && !orders.is_key("customer"));
        let function = |name: &str| match shop.table(name) {
            TablePlacement::Sharded(t) => Some(t.function.clone()),
            _ => None,
        };
        assert_eq!(
            function("sbtest1"),
            Some(ShardFunction::Range {
                bounds: vec![10, 20, 30]
            })
        );
        assert_eq!(
            function("sbtest_big_2"),
            Some(ShardFunction::Mod),
            "the longest prefix wins"
        );
        assert_eq!(
            shop.table("sbtest_big_1"),
            TablePlacement::Broadcast,
            "an exact name beats prefixes"
        );
        assert_eq!(
            shop.table("audit"),
            TablePlacement::Single(2),
            "single defaults to default_shard"
        );
        assert_eq!(shop.table("archive"), TablePlacement::Single(3));
        assert_eq!(
            shop.table("customers"),
            TablePlacement::Single(2),
            "no rule: the default shard"
        );
        assert_eq!(
            shop.table("Orders"),
            TablePlacement::Single(2),
            "table names are case-sensitive"
        );
        assert_eq!(shop.table("SBTEST1"), TablePlacement::Single(2), "prefixes too");
        assert!(matches!(function("events"), Some(ShardFunction::Date { .. })));
    }

    #[test]
    fn list_rules_place_folded_values() {
        let t = topology(SHOP);
        let shop = t.schema("shop").expect("shop");
        let TablePlacement::Sharded(regions) = shop.table("regions") else {
            panic!("sharded")
        };
        let shard = |v: &str| regions.function.shard_of(&KeyValue::Str(v.into()), shop.shard_count());
        assert_eq!(
            (shard("de"), shard("FR "), shard("ES"), shard("It")),
            (Ok(0), Ok(1), Ok(3), Ok(3))
        );
        assert_eq!(shard("nl").map_err(|e| e.mysql_code().0), Err(1526));
    }

    #[test]
    fn configs_built_in_code_are_validated() {
        let mut config = parse_str(&format!("{BASE}{SHOP}"), "t").expect("valid");
        config.schemas[0].shards[2] = "g9:shop_2".into();
        let e = Topology::from_config(&config).unwrap_err().to_string();
        assert!(
            e.contains("`schemas[0].shards[2]`") && e.contains("unknown group `g9`"),
            "{e}"
        );
        assert!(e.contains("configured groups: g0, g1"), "{e}");
    }

    #[test]
    fn unresolvable_entries_are_errors_never_fallbacks() {
        let e = resolve_shard("shop", 1, "g9:db", &["g0"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "schema `shop`: shard 1 (`g9:db`) names the unknown group `g9`"
        );
        let e = resolve_shard("shop", 0, "db", &["g0"]).unwrap_err();
        assert_eq!(e.to_string(), "schema `shop`: shard 0 (`db`) is not \"group:database\"");
        let config = parse_str(&format!("{BASE}{SHOP}"), "t").expect("valid");
        let mut schema = config.schemas[0].clone();
        schema.tables[1].bounds = None;
        let e = ShardedSchema::build(&schema, &["g0", "g1"]).unwrap_err();
        assert_eq!(e.to_string(), "schema `shop`, table `sbtest*`: `bounds` is missing");
        schema.tables[1].bounds = Some(vec![1, 2, 3]);
        schema.tables[4].lists = Some(vec![vec![ListValue::Str("a".into())], vec![ListValue::Str("A".into())]]);
        let e = ShardedSchema::build(&schema, &["g0", "g1"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "schema `shop`, table `regions`: list 1: 'a' is listed twice"
        );
    }
}
