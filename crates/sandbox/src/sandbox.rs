//! A set of servers started together under one base dir: [`Sandbox`].

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::client::setup_sql;
use crate::error::{Result, SandboxError};
use crate::options::SandboxOptions;
use crate::replication::{change_master_sql, repl_account_sql};
use crate::server::{Server, MAX_SOCKET_PATH, START_TIMEOUT, STOP_TIMEOUT};
use crate::stale::{reap_stale, running_server_pid, BASE_PREFIX, KEEP_MARKER};
use crate::template::prepare_datadir;
use crate::tools::tools;

static BASE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Independent local MariaDB servers (`s0`, `s1`, ...), each with its own data dir under
/// [`Sandbox::base_dir`] and its own 127.0.0.1 port. Dropping it stops every server
/// (SIGTERM, SIGKILL after 30 s) and removes the data dirs unless `keep_on_drop`.
/// With the `replication` option, `s0` is the primary and the others are its replicas.
#[derive(Debug)]
pub struct Sandbox {
    base_dir: PathBuf,
    created_base: bool,
    keep_on_drop: bool,
    replication: bool,
    servers: Vec<Server>,
}

impl Sandbox {
    /// Creates the data dirs (copies of the per-version template), starts all servers in
    /// parallel, waits until each is ready, then creates the users and databases. With
    /// `replication`, that setup runs on the primary only; the replicas are then pointed at
    /// it, and this returns once they have all caught up (within [`START_TIMEOUT`]).
    /// On error, whatever was started is stopped and removed again (unless `keep_on_drop`).
    pub fn start(opts: SandboxOptions) -> Result<Sandbox> {
        opts.validate()?;
        tools()?;
        reap_all_stale();
        let (base_dir, created_base) = make_base_dir(opts.base_dir.as_deref())?;
        let mut sandbox = Sandbox {
            base_dir,
            created_base,
            keep_on_drop: opts.keep_on_drop,
            replication: opts.replication,
            servers: Vec::with_capacity(opts.servers),
        };
        if opts.keep_on_drop {
            // Tells later processes' stale-sandbox cleanup to leave this dir alone.
            let marker = sandbox.base_dir.join(KEEP_MARKER);
            fs::write(&marker, b"").map_err(|e| SandboxError::io(format!("writing {}", marker.display()), e))?;
        }
        for i in 0..opts.servers {
            let name = format!("s{i}");
            let datadir = sandbox.base_dir.join(&name);
            let binlog = opts.binlog || opts.replication;
            let mut server = Server::new(name, datadir, binlog, opts.extra_args.clone())?;
            if opts.replication && i > 0 {
                server = server.into_replica();
            }
            clear_datadir(&server)?;
            prepare_datadir(server.datadir())?;
            sandbox.servers.push(server);
        }
        sandbox.start_all()?;
        sandbox.setup(&opts)?;
        Ok(sandbox)
    }

    /// Creates users and databases: on every server, or with replication on the primary only
    /// (replicas get them through the binary log; running the setup there as well would make
    /// the replicated CREATE USER fail), then starts the replicas and waits for them.
    fn setup(&self, opts: &SandboxOptions) -> Result<()> {
        let mut setup = setup_sql(&opts.users, &opts.databases);
        if !self.replication {
            for server in &self.servers {
                server.sql(&setup)?;
            }
            return Ok(());
        }
        setup.push_str(&repl_account_sql());
        self.primary().sql(&setup)?;
        let change_master = change_master_sql(self.primary().port());
        for replica in self.replicas() {
            replica.sql(&change_master)?;
        }
        self.wait_for_replicas(START_TIMEOUT)
    }

    fn start_all(&mut self) -> Result<()> {
        let started = Instant::now();
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .servers
                .iter_mut()
                .map(|s| scope.spawn(move || s.start_on_free_port()))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(SandboxError::io(
                            "starting a server",
                            std::io::Error::other("start thread panicked"),
                        ))
                    })
                })
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>>>()?;
        tracing::info!(servers = self.servers.len(), elapsed = ?started.elapsed(), base = %self.base_dir.display(), "sandbox started");
        Ok(())
    }

    /// All servers, in order `s0`, `s1`, ...
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// The primary: `s0` (with `replication` off simply the first server).
    pub fn primary(&self) -> &Server {
        &self.servers[0]
    }

    /// The replicas `s1`, `s2`, ... of [`Sandbox::primary`]; empty unless `replication`.
    pub fn replicas(&self) -> &[Server] {
        if self.replication {
            &self.servers[1..]
        } else {
            &[]
        }
    }

    /// Waits until every replica has applied the primary's current `@@gtid_binlog_pos`
    /// (with `MASTER_GTID_WAIT`), i.e. everything committed on the primary so far is visible
    /// on all replicas. `timeout` covers all replicas together. Fails with
    /// [`SandboxError::ReplicaTimeout`] naming the first replica that did not get there,
    /// with its `Last_SQL_Error` and `Last_IO_Error`. Returns at once without replicas.
    pub fn wait_for_replicas(&self, timeout: Duration) -> Result<()> {
        if self.replicas().is_empty() {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        let target = self.primary().gtid_binlog_pos()?;
        for replica in self.replicas() {
            replica.wait_for_gtid(&target, deadline.saturating_duration_since(Instant::now()))?;
        }
        Ok(())
    }

    /// Server `i`. Panics if `i >= servers().len()`.
    pub fn server(&self, i: usize) -> &Server {
        &self.servers[i]
    }

    /// Server `i`, mutably (to kill, stop or restart it). Panics if `i >= servers().len()`.
    pub fn server_mut(&mut self, i: usize) -> &mut Server {
        &mut self.servers[i]
    }

    /// The dir holding the servers' data dirs.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// Stops every server gracefully and cleans up (the same as dropping it).
    pub fn stop(self) {
        drop(self);
    }

    fn shutdown(&mut self) {
        for server in &mut self.servers {
            server.signal_term();
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        for server in &mut self.servers {
            if let Err(e) = server.wait_exit(deadline) {
                tracing::warn!(server = server.name(), error = %e, "stopping server failed");
            }
        }
        if self.keep_on_drop {
            return;
        }
        if self.created_base {
            remove_dir(&self.base_dir);
        } else {
            for server in &self.servers {
                remove_dir(server.datadir());
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn remove_dir(dir: &Path) {
    if let Err(e) = fs::remove_dir_all(dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(dir = %dir.display(), error = %e, "removing sandbox dir failed");
        }
    }
}

/// Cleans up sandboxes of dead processes, unless `TESSERA_SANDBOX_NO_REAP=1` (e.g. when
/// /tmp is shared with another pid namespace, where owners look dead but are not).
fn reap_all_stale() {
    if std::env::var("TESSERA_SANDBOX_NO_REAP").is_ok_and(|v| v == "1") {
        return;
    }
    let tmp = std::env::temp_dir();
    reap_stale(&tmp);
    if tmp != Path::new("/tmp") {
        reap_stale(Path::new("/tmp"));
    }
}

/// Creates the base dir; returns it and whether we created it (then we remove it whole).
fn make_base_dir(requested: Option<&Path>) -> Result<(PathBuf, bool)> {
    if let Some(dir) = requested {
        let existed = dir.exists();
        fs::create_dir_all(dir).map_err(|e| SandboxError::io(format!("creating {}", dir.display()), e))?;
        return Ok((dir.to_path_buf(), !existed));
    }
    let root = default_root();
    loop {
        let n = BASE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("{BASE_PREFIX}{}-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok((dir, true)),
            // Left over by an earlier process with the same pid: take the next number.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(SandboxError::io(format!("creating {}", dir.display()), e));
            }
        }
    }
}

/// The temp dir, or `/tmp` when the temp dir is too long for unix socket paths.
fn default_root() -> PathBuf {
    let tmp = std::env::temp_dir();
    let worst = tmp.join(format!("{BASE_PREFIX}4294967295-999999/s9999/mysql.sock"));
    if worst.as_os_str().len() <= MAX_SOCKET_PATH {
        tmp
    } else {
        PathBuf::from("/tmp")
    }
}

/// Removes a data dir left from an earlier run, refusing if a server still runs in it.
fn clear_datadir(server: &Server) -> Result<()> {
    let dir = server.datadir();
    if !dir.exists() {
        return Ok(());
    }
    if let Some(pid) = running_server_pid(dir) {
        return Err(SandboxError::AlreadyRunning {
            server: format!("{} ({})", server.name(), dir.display()),
            pid,
        });
    }
    fs::remove_dir_all(dir).map_err(|e| SandboxError::io(format!("removing {}", dir.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_base_dirs_are_fresh_and_distinct() {
        let (a, created_a) = make_base_dir(None).unwrap();
        let (b, created_b) = make_base_dir(None).unwrap();
        assert!(created_a && created_b);
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("{BASE_PREFIX}{}-", std::process::id())));
        fs::remove_dir(&a).unwrap();
        fs::remove_dir(&b).unwrap();
    }

    #[test]
    fn default_root_fits_socket_paths() {
        let root = default_root();
        assert!(root.join("tessera-sandbox-1-1/s0/mysql.sock").as_os_str().len() <= MAX_SOCKET_PATH);
    }
}
