//! Local MariaDB sandboxes: servers with their own data dirs on free ports, for demo, tests and
//! benchmarks; an etcd server ([`EtcdServer`]) and an HAProxy ([`HaProxy`]) for the fleet.
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
//! # Replication
//!
//! With [`SandboxOptions::replication`] (and `servers >= 2`), `s0` is a primary and every
//! other server a GTID replica of it (`CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos`).
//! All servers run with the binary log (ROW format, `--log-slave-updates`) and unique
//! server ids; replicas run `--read-only` (which does not stop root or the configured users,
//! who have all privileges). Users and databases are created on the primary only, together
//! with the replication account [`REPL_USER`]/[`REPL_PASSWORD`], and reach the replicas
//! through replication; [`Sandbox::start`] returns once every replica has caught up.
//!
//! ```no_run
//! use std::time::Duration;
//! use tessera_sandbox::{Sandbox, SandboxOptions};
//!
//! let mut sandbox = Sandbox::start(SandboxOptions { servers: 3, replication: true, ..Default::default() })?;
//! sandbox.primary().sql("create table test.t (id int primary key); insert into test.t values (1)")?;
//! sandbox.wait_for_replicas(Duration::from_secs(30))?; // now visible on s1 and s2
//! for replica in sandbox.replicas() {
//!     assert_eq!(replica.sql("select count(*) from test.t")?.trim(), "1");
//!     assert!(replica.replica_status()?.sql_running);
//! }
//! // Let s1 fall behind, then catch up again.
//! sandbox.replicas()[0].stop_replica_sql_thread()?;
//! sandbox.replicas()[0].start_replica_sql_thread()?;
//! // A replica restarted after a crash resumes replication by itself.
//! sandbox.server_mut(2).kill()?;
//! sandbox.server_mut(2).start()?;
//! sandbox.wait_for_replicas(Duration::from_secs(30))?;
//! # Ok::<(), tessera_sandbox::SandboxError>(())
//! ```
//!
//! MariaDB keeps the replication settings in the replica's data dir (`master.info`) and the
//! applied position in `mysql.gtid_slave_pos` (InnoDB, so it survives `kill -9`): a restarted
//! replica reconnects and continues from where it was. Replicas retry a lost connection to
//! the primary every second.
//!
//! Every [`Sandbox::start`] first cleans up default base dirs (`<tmp>/tessera-sandbox-<pid>-<n>`)
//! whose owning process is gone: it SIGKILLs their orphaned mariadbd and removes the dir
//! (unless created with `keep_on_drop`). `TESSERA_SANDBOX_NO_REAP=1` turns that off.

mod args;
mod client;
mod error;
mod etcd;
pub mod haproxy;
mod options;
mod ports;
mod replication;
mod sandbox;
mod server;
mod stale;
mod template;
mod tools;

pub use error::SandboxError;
pub use etcd::EtcdServer;
pub use haproxy::HaProxy;
pub use options::SandboxOptions;
pub use ports::free_port;
pub use replication::{ReplicaStatus, REPL_PASSWORD, REPL_USER};
pub use sandbox::Sandbox;
pub use server::{Server, START_TIMEOUT, STOP_TIMEOUT};
pub use template::{template_path, NO_TEMPLATE_ENV};
