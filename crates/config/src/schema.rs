//! The sharding configuration model: `[[schemas]]` (logical databases split over shards) and their
//! `[[schemas.tables]]` rules. Validation lives in [`crate::load`]; the proxy resolves this into
//! its topology snapshot.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// One logical database that clients see, split over shards.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchemaConfig {
    /// The database name clients use (`USE shop`, `shop.orders`).
    pub name: String,
    /// Logical shard `i` -> `"group:database"`: the backend group and the physical database.
    pub shards: Vec<String>,
    /// The shard of tables no rule names (default 0).
    #[serde(default)]
    pub default_shard: usize,
    /// Placement rules, by table name or `prefix*` pattern.
    #[serde(default)]
    pub tables: Vec<TableConfig>,
}

impl SchemaConfig {
    /// The shard entries split into `(group, database)`; `None` for a malformed entry.
    pub fn shard_entries(&self) -> impl Iterator<Item = Option<(&str, &str)>> {
        self.shards.iter().map(|s| split_shard_entry(s))
    }
}

/// `"g0:shop_0"` -> `("g0", "shop_0")`; `None` unless both sides are non-empty and the
/// database name has no further `:`.
pub fn split_shard_entry(entry: &str) -> Option<(&str, &str)> {
    let (group, database) = entry.split_once(':')?;
    let valid = !group.is_empty() && !database.is_empty() && !database.contains(':');
    valid.then_some((group, database))
}

/// How a table is placed over the shards of its schema.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// Rows are spread by a shard function of one column.
    #[default]
    Sharded,
    /// A full copy on every shard (small reference tables joined with sharded ones).
    Broadcast,
    /// Lives whole on one shard.
    Single,
}

/// The shard function of a sharded table (see the README's "Sharding configuration").
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    /// `CRC32(canonical text) % shards`.
    #[default]
    Hash,
    /// `MOD(MOD(key, shards) + shards, shards)`.
    Mod,
    /// Ascending integer bounds.
    Range,
    /// One value list per shard.
    List,
    /// A date unit number modulo the shard count.
    Date,
}

/// The type class of the shard key column.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum KeyType {
    /// Integer columns: values are compared as integers.
    #[default]
    Int,
    /// Character columns with a case-insensitive, PAD SPACE collation.
    String,
}

/// The unit a `date` function counts in.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum DateUnit {
    Year,
    Month,
    Day,
}

/// One `[[schemas.tables]]` rule.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    /// A table name, or a prefix followed by `*` (`"sbtest*"`). Case-sensitive.
    pub name: String,
    #[serde(default)]
    pub kind: TableKind,
    /// The column whose value places a row (sharded tables only).
    pub shard_key: Option<String>,
    /// Unset: hash.
    pub function: Option<FunctionKind>,
    /// Unset: int.
    pub key_type: Option<KeyType>,
    /// `range`: `shards - 1` strictly ascending integers.
    pub bounds: Option<Vec<i64>>,
    /// `list`: one list of values per shard.
    pub lists: Option<Vec<Vec<ListValue>>>,
    /// `date`: the unit.
    pub unit: Option<DateUnit>,
    /// `single`: the shard holding the table (unset: the schema's `default_shard`).
    pub shard: Option<usize>,
    /// Sharded tables with an integer key: the key is the table's AUTO_INCREMENT column, and
    /// an INSERT that leaves it out gets values from Tessera's sequence (unique across shards).
    #[serde(default)]
    pub auto_increment: bool,
}

impl TableConfig {
    /// The configured function, hash when unset.
    pub fn function(&self) -> FunctionKind {
        self.function.unwrap_or_default()
    }

    /// The configured key type, int when unset.
    pub fn key_type(&self) -> KeyType {
        self.key_type.unwrap_or_default()
    }

    /// The name without its trailing `*` and whether it is a prefix pattern.
    pub fn pattern(&self) -> (&str, bool) {
        match self.name.strip_suffix('*') {
            Some(prefix) => (prefix, true),
            None => (&self.name, false),
        }
    }
}

/// A value of a `lists` entry: an integer (int keys) or a string (string keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListValue {
    Int(i64),
    Str(String),
}

impl fmt::Display for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListValue::Int(i) => write!(f, "{i}"),
            ListValue::Str(s) => write!(f, "\"{s}\""),
        }
    }
}

impl<'de> Deserialize<'de> for ListValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ListValueVisitor)
    }
}

struct ListValueVisitor;

impl Visitor<'_> for ListValueVisitor {
    type Value = ListValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer (key_type = \"int\") or a string (key_type = \"string\")")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ListValue, E> {
        Ok(ListValue::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ListValue, E> {
        i64::try_from(v)
            .map(ListValue::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ListValue, E> {
        Ok(ListValue::Str(v.to_string()))
    }
}

/// The canonical form of a string shard key: trailing spaces (U+0020 only) removed, then every
/// character lower-cased by Unicode's simple case mapping (one character to one; `İ` becomes
/// `i`). Two strings with the same canonical form are the same key; this is the single
/// definition the config validation and the proxy's shard functions share.
pub fn fold_string_key(s: &str) -> String {
    s.trim_end_matches(' ').chars().map(simple_lowercase).collect()
}

/// Unicode simple lower-case mapping of one character.
fn simple_lowercase(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        // Only U+0130 lower-cases to two characters (i + combining dot); its simple mapping is i.
        _ => 'i',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_entries_split_on_the_colon() {
        assert_eq!(split_shard_entry("g0:shop_0"), Some(("g0", "shop_0")));
        for bad in ["g0", ":shop", "g0:", "g0:a:b", ""] {
            assert_eq!(split_shard_entry(bad), None, "{bad}");
        }
    }

    #[test]
    fn string_keys_fold_case_and_trailing_spaces() {
        assert_eq!(fold_string_key("Ärger  "), "ärger");
        assert_eq!(fold_string_key(" A\t"), " a\t", "only trailing U+0020 goes");
        assert_eq!(fold_string_key("İSTANBUL"), "istanbul");
        assert_eq!(fold_string_key("ΣΑΣ"), "σασ", "no final-sigma rule");
        assert_eq!(fold_string_key("ẞ"), "ß");
        assert_eq!(fold_string_key(""), "");
    }

    #[test]
    fn patterns_and_defaults() {
        let t: TableConfig = toml::from_str("name = \"sbtest*\"").expect("parses");
        assert_eq!(t.pattern(), ("sbtest", true));
        assert_eq!(
            (t.kind, t.function(), t.key_type()),
            (TableKind::Sharded, FunctionKind::Hash, KeyType::Int)
        );
        let t: TableConfig = toml::from_str("name = \"orders\"\nlists = [[1, \"a\"]]").expect("parses");
        assert_eq!(t.pattern(), ("orders", false));
        assert_eq!(t.lists, Some(vec![vec![ListValue::Int(1), ListValue::Str("a".into())]]));
        let e = toml::from_str::<TableConfig>("name = \"t\"\nlists = [[1.5]]").unwrap_err();
        assert!(e.to_string().contains("an integer"), "{e}");
    }
}
