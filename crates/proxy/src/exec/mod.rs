//! Running statements on backends: [`forward`](mod@forward) copies a single-target response to the client
//! packet by packet, translating only what differs between the client's and the backend's
//! capabilities (EOF vs DEPRECATE_EOF, session tracking in OK packets). [`scatter`] runs a
//! read on several shards and [`merge`]s their rows ([`row`] decodes them); [`sharded`] runs
//! a routed statement that spans shards (reads, writes, DDL, LOAD DATA) through the session's
//! shard connections; [`sequence`] hands out AUTO_INCREMENT keys for sharded inserts.

pub mod forward;
pub mod merge;
pub mod row;
pub mod scatter;
pub mod sequence;
pub mod sharded;

pub use forward::{forward, ClientSide, Metadata, Mode, Outcome};
