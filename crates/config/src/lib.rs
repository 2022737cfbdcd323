//! Tessera configuration: the typed model ([`model`]), loading from a TOML file and validation
//! with errors that name the file, the key and the fix ([`load`]); the sharding model ([`schema`]); a fleet's shared document composed with each
//! proxy's own settings ([`fleet`]).

pub mod fleet;
pub mod load;
pub mod model;
pub mod schema;

pub use load::{load_file, parse_str, validate_schemas, ConfigError, CONSISTENCY_LEVELS};
pub use model::*;
pub use schema::*;
