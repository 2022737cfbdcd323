//! The sharding topology snapshot: logical schemas, their shards (group + database) and table rules.
