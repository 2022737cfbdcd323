//! Shard functions: which logical shard a shard-key value lives on (see the README's sharding section).
