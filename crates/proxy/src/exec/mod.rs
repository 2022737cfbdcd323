//! Running statements on backends: [`forward`](mod@forward) copies a single-target response to the client
//! packet by packet, translating only what differs between the client's and the backend's
//! capabilities (EOF vs DEPRECATE_EOF, session tracking in OK packets).

pub mod forward;
pub mod merge;
pub mod row;
pub mod scatter;

pub use forward::{forward, ClientSide, Metadata, Mode, Outcome};
