//! The sharding planner's errors: why a plan's values pick no shard, a key value that cannot
//! be placed, or a statement the planner refuses (mapped to MySQL numbers in [`super`]).

use thiserror::Error;

/// Why a plan's values pick no shard, or the planner gives no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A construct the planner refuses (the text names it).
    #[error("Tessera: {0} is not supported")]
    Refused(String),
    /// Tables joined by their key values, whose values are on several shards.
    #[error("{}", VALUES_ON_SEVERAL_SHARDS)]
    ValuesOnSeveralShards,
    /// A key value no shard takes, or not of the key's type.
    #[error(transparent)]
    Key(#[from] ShardError),
    /// A value the plan reads is not there (an unbound parameter, a lost literal).
    #[error("Tessera: {0}")]
    MissingValue(String),
}

impl From<String> for PlanError {
    fn from(reason: String) -> PlanError {
        PlanError::Refused(reason)
    }
}

impl From<&str> for PlanError {
    fn from(reason: &str) -> PlanError {
        PlanError::Refused(reason.to_string())
    }
}

impl PlanError {
    /// The reason alone, as EXPLAIN ROUTE prints it.
    pub fn detail(&self) -> String {
        match self {
            PlanError::Refused(m) | PlanError::MissingValue(m) => m.clone(),
            other => other.to_string(),
        }
    }
}

/// The error of a `KeyExpr::OneShard` statement whose key values are on several shards.
pub const VALUES_ON_SEVERAL_SHARDS: &str = "Tessera: a join of sharded tables whose shard-key values are on \
     different shards (not an equality on their shard keys) is not supported";

/// Why a key value cannot be placed; each maps to the MySQL error a server would give.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShardError {
    /// A `list` function has no shard for the value (MySQL 1526).
    #[error("Table has no partition for value {value}")]
    NoPartition { value: String },
    /// Not an integer (or not an integral one) for an int key (MySQL 1366).
    #[error("Incorrect integer value: '{value}' for the shard key")]
    IncorrectInteger { value: String },
    /// An integer outside the BIGINT range (MySQL 1264).
    #[error("Out of range value for the shard key: {value}")]
    OutOfRange { value: String },
    /// Not a date Tessera reads for a date key (MySQL 1292).
    #[error("Incorrect date value: '{value}' for the shard key")]
    IncorrectDate { value: String },
    /// Not UTF-8, or a double, for a string key (MySQL 1366).
    #[error("Incorrect string value: '{value}' for the shard key")]
    IncorrectString { value: String },
    /// The function does not fit the schema's shard count (a topology bug, never a client's).
    #[error("the shard function does not fit a schema of {shards} shards")]
    ShardCount { shards: usize },
}

impl ShardError {
    /// The error message MySQL would give for the key column `column`.
    pub fn mysql_message(&self, column: &str) -> String {
        match self {
            ShardError::IncorrectInteger { value } => {
                format!("Incorrect integer value: '{value}' for column `{column}`")
            }
            ShardError::OutOfRange { .. } => format!("Out of range value for column '{column}'"),
            ShardError::IncorrectDate { value } => format!("Incorrect date value: '{value}' for column `{column}`"),
            ShardError::IncorrectString { value } => {
                format!("Incorrect string value: '{value}' for column `{column}`")
            }
            ShardError::NoPartition { .. } | ShardError::ShardCount { .. } => self.to_string(),
        }
    }
}
