//! Local MariaDB sandboxes: servers with their own data dirs on free ports, for demo, tests and benchmarks.
//!
//! ```no_run
//! use tessera_sandbox::{Sandbox, SandboxOptions};
//!
//! let sandbox = Sandbox::start(SandboxOptions { servers: 2, ..Default::default() })?;
//! for server in sandbox.servers() {
//!     println!("{} listens on {}:{}", server.name(), server.host(), server.port());
//!     assert_eq!(server.sql("select @@port")?.trim(), server.port().to_string());
//! }
//! // Dropping the sandbox stops the servers and removes their data dirs.
//! # Ok::<(), tessera_sandbox::SandboxError>(())
//! ```
//!
//! Data dirs are copies of one template per MariaDB version, created on first use under
//! the temp dir (`tessera-sandbox-template-<version>`); set `TESSERA_SANDBOX_NO_TEMPLATE=1`
//! to run `mariadb-install-db` for every server instead. Program paths can be overridden
//! with `TESSERA_MARIADBD`, `TESSERA_MARIADB` and `TESSERA_MARIADB_INSTALL_DB`.
//!
//! Every [`Sandbox::start`] first cleans up default base dirs (`<tmp>/tessera-sandbox-<pid>-<n>`)
//! whose owning process is gone: it SIGKILLs their orphaned mariadbd and removes the dir
//! (unless created with `keep_on_drop`). `TESSERA_SANDBOX_NO_REAP=1` turns that off.

mod args;
mod client;
mod error;
mod options;
mod ports;
mod sandbox;
mod server;
mod stale;
mod template;
mod tools;

pub use error::SandboxError;
pub use options::SandboxOptions;
pub use ports::free_port;
pub use sandbox::Sandbox;
pub use server::{Server, START_TIMEOUT, STOP_TIMEOUT};
pub use template::{template_path, NO_TEMPLATE_ENV};
