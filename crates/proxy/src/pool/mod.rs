//! Backend connection pool of one server: a semaphore bounds the connections in use, idle
//! connections wait in a LIFO list (one per FOUND_ROWS flavour, since that flag is fixed per
//! connection), dead servers are retried with exponential backoff, and a maintenance task
//! keeps `min_idle` and closes connections past their idle timeout or lifetime.

pub mod pipeline;

use crate::alloc::in_heap;
use crate::backend::connect::{connect, ConnectOptions};
use crate::backend::{BackendConn, ServerRef};
use crate::error::ProxyError;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tessera_config::PoolConfig;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use crate::backend::Flavour;

/// Counters exported as metrics.
#[derive(Debug, Default)]
pub struct PoolStats {
    pub open: AtomicUsize,
    pub pinned: AtomicUsize,
    pub checkouts: AtomicU64,
    pub checkout_timeouts: AtomicU64,
    pub connects: AtomicU64,
    pub connect_failures: AtomicU64,
    pub discarded_broken: AtomicU64,
}

#[derive(Debug, Default)]
struct Health {
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

/// The pool of one backend server.
pub struct Pool {
    pub server: ServerRef,
    cfg: PoolConfig,
    opts: ConnectOptions,
    /// Boxed so that lending and returning one moves a pointer, not the connection.
    #[allow(clippy::vec_box)]
    idle: Mutex<[Vec<Box<BackendConn>>; Flavour::COUNT]>,
    permits: Arc<Semaphore>,
    health: Mutex<Health>,
    /// Set while `health` records a failure: a healthy pool's checkout takes no lock for it.
    failing: std::sync::atomic::AtomicBool,
    pub stats: PoolStats,
    version: OnceLock<String>,
    extended: OnceLock<u32>,
    /// Pipelined lanes on this server (see [`crate::pool::pipeline`]).
    pub lanes: crate::pool::pipeline::Lanes,
    /// Wakes [`Pool::settle`] when an idle connection carries a queued COMMIT/ROLLBACK.
    queued_ends: tokio::sync::Notify,
    /// Backend threads a KILL may reach (see [`Pool::mark_killed`]).
    killed: KillMarks,
    /// The server left the configuration (see [`Pool::retire`]).
    retired: std::sync::atomic::AtomicBool,
}

/// The backend threads of a pool's lent connections that a KILL was sent to or is on its
/// way to: such a connection is closed when it comes back, never lent again.
#[derive(Debug, Default)]
struct KillMarks {
    /// How many are marked: a connection coming back looks at the list only when some are.
    count: AtomicUsize,
    threads: Mutex<Vec<u32>>,
}

impl KillMarks {
    /// Marks threads of connections that will never come back (replaced, lost) are forgotten
    /// past this many, oldest first.
    const MAX: usize = 1024;

    fn mark(&self, thread_id: u32) {
        if let Ok(mut threads) = self.threads.lock() {
            if threads.len() >= Self::MAX {
                threads.remove(0);
            } else {
                self.count.fetch_add(1, Ordering::SeqCst);
            }
            threads.push(thread_id);
        }
    }

    /// Removes the mark of `thread_id`; true when there was one.
    fn take(&self, thread_id: u32) -> bool {
        if self.count.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let Ok(mut threads) = self.threads.lock() else {
            return false;
        };
        let Some(i) = threads.iter().position(|t| *t == thread_id) else {
            return false;
        };
        threads.swap_remove(i);
        self.count.fetch_sub(1, Ordering::SeqCst);
        true
    }
}

impl Pool {
    pub fn new(server: ServerRef, cfg: PoolConfig, opts: ConnectOptions) -> Arc<Self> {
        Arc::new(Pool {
            server,
            permits: Arc::new(Semaphore::new(cfg.max_size)),
            cfg,
            opts,
            idle: Mutex::new(Default::default()),
            health: Mutex::new(Health::default()),
            failing: Default::default(),
            stats: PoolStats::default(),
            version: OnceLock::new(),
            extended: OnceLock::new(),
            lanes: Default::default(),
            queued_ends: tokio::sync::Notify::new(),
            killed: KillMarks::default(),
            retired: Default::default(),
        })
    }

    /// The server left the configuration: idle connections close now, lent ones as they
    /// come back (a session of an older generation may still finish its transaction on one),
    /// and the upkeep tasks end. The current generation never checks out from it again.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        let idle: Vec<Box<BackendConn>> = match self.idle.lock() {
            Ok(mut idle) => idle.iter_mut().flat_map(std::mem::take).collect(),
            Err(_) => Vec::new(),
        };
        idle.into_iter().for_each(|c| self.close(c));
        self.queued_ends.notify_one();
        tracing::info!(server = %self.server.name, lent = self.in_use(), "pool retired: closing its connections");
    }

    /// Starts the pool's upkeep tasks: idle expiry and top-up, and the settling of queued ends.
    pub fn start_upkeep(self: &Arc<Self>, shutdown: tokio::sync::watch::Receiver<bool>) {
        tokio::spawn(self.clone().maintain(shutdown.clone()));
        tokio::spawn(self.clone().settle(shutdown));
    }

    /// True once [`Pool::retire`] ran.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }

    /// Marks the backend thread of a lent connection that a KILL is about to reach: when the
    /// connection comes back it is closed, not lent again (the interrupted statement left its
    /// session state unknown, and a KILL still on its way must not reach another session's
    /// statement). The KILL marks first, then checks that the session still runs there
    /// ([`crate::registry::SessionHandle::still_running`]); the session ends its turn before
    /// it gives the connection back, so one of the two always sees the other.
    pub fn mark_killed(&self, thread_id: u32) {
        self.killed.mark(thread_id);
    }

    /// Undoes [`Pool::mark_killed`] when no KILL was sent after all.
    pub fn unmark_killed(&self, thread_id: u32) {
        self.killed.take(thread_id);
    }

    /// MariaDB extended capabilities the server offers (0 for MySQL or before any connection).
    pub fn server_extended_capabilities(&self) -> u32 {
        self.extended.get().copied().unwrap_or(0)
    }

    /// The backend's version string, once any connection succeeded.
    pub fn server_version(&self) -> Option<&str> {
        self.version.get().map(String::as_str)
    }

    pub fn max_size(&self) -> usize {
        self.cfg.max_size
    }

    /// Connections handed out and not yet returned (pinned ones excluded).
    pub fn in_use(&self) -> usize {
        self.cfg.max_size - self.permits.available_permits()
    }

    pub fn idle_count(&self) -> usize {
        // Every flavour's list (the extended-metadata ones were once left out of this count).
        self.idle.lock().map(|i| i.iter().map(Vec::len).sum()).unwrap_or(0)
    }

    /// True while the server is considered down.
    pub fn is_down(&self) -> bool {
        if !self.failing.load(Ordering::Acquire) {
            return false;
        }
        self.health
            .lock()
            .map(|h| h.retry_at.is_some_and(|t| t > Instant::now()))
            .unwrap_or(false)
    }

    /// Borrows a connection (FOUND_ROWS flavour as asked), waiting up to checkout_timeout.
    /// `no_schema` asks for a connection without a default schema (MySQL cannot unset one).
    pub async fn checkout(self: &Arc<Self>, flavour: Flavour, no_schema: bool) -> Result<PooledConn, ProxyError> {
        self.checkout_preferring(flavour, no_schema, None).await
    }

    /// [`Pool::checkout`], preferring a recently used idle connection that has `schema`
    /// selected already (shards of one server have databases of their own: no COM_INIT_DB).
    pub async fn checkout_preferring(
        self: &Arc<Self>,
        flavour: Flavour,
        no_schema: bool,
        schema: Option<&str>,
    ) -> Result<PooledConn, ProxyError> {
        self.check_backoff()?;
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => in_heap(|| self.wait_for_permit()).await?,
        };
        self.stats.checkouts.fetch_add(1, Ordering::Relaxed);
        let conn = match self.take_idle(flavour, no_schema, schema) {
            Some(c) => c,
            // Opening a connection is the cold path: its large future lives on the heap.
            None => in_heap(|| self.open(flavour)).await?,
        };
        Ok(PooledConn {
            conn: Some(conn),
            permit: Some(permit),
            pool: self.clone(),
        })
    }

    /// Waits for a free connection slot, up to the checkout timeout.
    async fn wait_for_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ProxyError> {
        let wait = self.cfg.checkout_timeout();
        match tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            _ => {
                self.stats.checkout_timeouts.fetch_add(1, Ordering::Relaxed);
                Err(ProxyError::CheckoutTimeout {
                    server: self.server.name.clone(),
                    waited_ms: wait.as_millis() as u64,
                    max_size: self.cfg.max_size,
                })
            }
        }
    }

    /// Replaces a lent connection by a fresh one (e.g. to get rid of its default schema).
    pub async fn reopen(&self, guard: &mut PooledConn) -> Result<(), ProxyError> {
        let fresh = in_heap(|| self.open(guard.flavour())).await?;
        if let Some(old) = guard.conn.replace(fresh) {
            self.close(old);
        }
        Ok(())
    }

    /// Opens a connection outside the pool's accounting (e.g. to send KILL while the pool is
    /// exhausted). The caller closes it by dropping it.
    pub async fn connect_unpooled(&self) -> Result<BackendConn, ProxyError> {
        connect(&self.server, &self.opts).await
    }

    /// Pops a healthy idle connection, closing expired or dead ones on the way; with
    /// `no_schema`, one without a default schema is preferred.
    fn take_idle(&self, flavour: Flavour, no_schema: bool, schema: Option<&str>) -> Option<Box<BackendConn>> {
        /// Idle connections looked at for one with the wanted schema (newest first).
        const LOOK: usize = 8;
        loop {
            let conn = {
                let mut idle = self.idle.lock().ok()?;
                let list = &mut idle[flavour.index()];
                let newest = list.len().checked_sub(1)?;
                let at = match (no_schema, schema) {
                    (true, _) => list.iter().rposition(|c| c.state.schema.is_none()).unwrap_or(newest),
                    (false, Some(want)) => list
                        .iter()
                        .rev()
                        .take(LOOK)
                        .position(|c| c.state.schema.as_deref() == Some(want))
                        .map_or(newest, |back| newest - back),
                    (false, None) => newest,
                };
                list.remove(at)
            };
            let now = Instant::now();
            let idle_for = now.saturating_duration_since(conn.last_used);
            let suspect = idle_for > Duration::from_secs(1) && conn.io.get_ref().peer_closed_or_chatty();
            if self.expired_at(&conn, now) || suspect {
                self.close(conn);
                continue;
            }
            return Some(conn);
        }
    }

    fn expired(&self, conn: &BackendConn) -> bool {
        self.expired_at(conn, Instant::now())
    }

    /// [`Pool::expired`] with the clock already read.
    fn expired_at(&self, conn: &BackendConn, now: Instant) -> bool {
        conn.broken
            || (conn.has_pending_answers() && !conn.has_queued_end())
            || now.saturating_duration_since(conn.created) > self.cfg.max_lifetime()
            || now.saturating_duration_since(conn.last_used) > self.cfg.idle_timeout()
    }

    /// Opens a new connection, making room by closing an idle one of another flavour.
    async fn open(&self, flavour: Flavour) -> Result<Box<BackendConn>, ProxyError> {
        if self.stats.open.load(Ordering::Relaxed) >= self.cfg.max_size {
            let other = self
                .idle
                .lock()
                .ok()
                .and_then(|mut lists| lists.iter_mut().find_map(Vec::pop));
            if let Some(c) = other {
                self.close(c);
            }
        }
        let opts = ConnectOptions {
            found_rows: flavour.found_rows,
            extended_metadata: flavour.extended_metadata,
            ..self.opts.clone()
        };
        match connect(&self.server, &opts).await {
            Ok(conn) => {
                self.stats.open.fetch_add(1, Ordering::Relaxed);
                self.stats.connects.fetch_add(1, Ordering::Relaxed);
                let _ = self.version.set(conn.server_version.clone());
                let _ = self.extended.set(conn.server_extended_capabilities);
                self.mark_up();
                Ok(Box::new(conn))
            }
            Err(e) => {
                self.stats.connect_failures.fetch_add(1, Ordering::Relaxed);
                self.mark_down(&e);
                Err(e)
            }
        }
    }

    fn check_backoff(&self) -> Result<(), ProxyError> {
        if !self.failing.load(Ordering::Acquire) {
            return Ok(());
        }
        let h = self
            .health
            .lock()
            .map_err(|_| ProxyError::Config("pool state poisoned".into()))?;
        match h.retry_at {
            Some(t) if t > Instant::now() => Err(ProxyError::BackendUnavailable {
                server: self.server.name.clone(),
                reason: format!(
                    "{} (next retry in {} ms)",
                    h.last_error,
                    (t - Instant::now()).as_millis()
                ),
            }),
            _ => Ok(()),
        }
    }

    fn mark_down(&self, e: &ProxyError) {
        if let Ok(mut h) = self.health.lock() {
            h.failures = h.failures.saturating_add(1);
            self.failing.store(true, Ordering::Release);
            let backoff = Duration::from_millis(100 << h.failures.min(8)).min(self.cfg.backoff_max());
            h.retry_at = Some(Instant::now() + backoff);
            h.last_error = e.to_string();
            if h.failures == 1 {
                tracing::warn!(server = %self.server.name, error = %e, "backend down; retrying with backoff");
            }
        }
    }

    /// The monitor reached the server: end any backoff, so sessions use it again at once
    /// instead of failing (and taking it out of the read rotation) until the backoff expires.
    pub fn note_reachable(&self) {
        self.mark_up();
    }

    fn mark_up(&self) {
        if let Ok(mut h) = self.health.lock() {
            if h.failures > 0 {
                tracing::info!(server = %self.server.name, "backend reachable again");
            }
            *h = Health::default();
            self.failing.store(false, Ordering::Release);
        }
    }

    fn close(&self, conn: Box<BackendConn>) {
        self.killed.take(conn.thread_id);
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
        if conn.broken {
            self.stats.discarded_broken.fetch_add(1, Ordering::Relaxed);
        } else {
            // COM_QUIT, best effort and without waiting.
            conn.io.get_ref().try_write_now(&[1, 0, 0, 0, 1]);
        }
        drop(conn);
    }

    /// Takes back a connection; `detached` ones were pinned and hold no permit.
    fn give_back(&self, mut conn: Box<BackendConn>, detached: bool) {
        if detached {
            self.stats.pinned.fetch_sub(1, Ordering::Relaxed);
        }
        if self.killed.take(conn.thread_id) {
            conn.broken = true;
        }
        // More connections than max_size exist when a checkout opened one while others were
        // out of the idle list (being settled): close the extra one as it comes back.
        let full = (detached && self.idle_count() + self.in_use() >= self.cfg.max_size)
            || self.stats.open.load(Ordering::Relaxed) > self.cfg.max_size;
        let now = Instant::now();
        if self.expired_at(&conn, now) || full || conn.pinned_state || self.is_retired() {
            self.close(conn);
            return;
        }
        conn.last_used = now;
        let flavour = conn.flavour().index();
        let queued_end = conn.has_queued_end();
        match self.idle.lock() {
            Ok(mut idle) => idle[flavour].push(conn),
            Err(_) => self.close(conn),
        }
        if queued_end {
            self.queued_ends.notify_one();
        }
    }

    /// Sends the queued COMMIT/ROLLBACK of connections that stayed idle for `pool.queued_end_settle_ms`
    /// (under load the next checkout takes it along first). One wake-up per period at most.
    pub async fn settle(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = self.queued_ends.notified() => {}
                _ = shutdown.changed() => return,
            }
            if self.is_retired() {
                return;
            }
            loop {
                tokio::time::sleep(self.cfg.queued_end_settle()).await;
                let Some((due, more)) = self.take_due_ends() else {
                    return;
                };
                for lent in due {
                    self.settle_one(lent).await;
                }
                if !more {
                    break;
                }
            }
        }
    }

    /// Lends to the settle task the idle connections whose queued end has waited
    /// `pool.queued_end_settle_ms`, each with a permit as a checkout would (so no checkout finds the idle
    /// list empty meanwhile and opens one more); says whether younger ones remain. A connection
    /// given back a moment ago stays for the next checkout. When every slot is lent, a waiting
    /// checkout takes the connection with its queued end instead.
    fn take_due_ends(self: &Arc<Self>) -> Option<(Vec<PooledConn>, bool)> {
        let now = Instant::now();
        let after = self.cfg.queued_end_settle();
        let due = |c: &BackendConn| c.has_queued_end() && now.saturating_duration_since(c.last_used) >= after;
        let mut idle = self.idle.lock().ok()?;
        let (mut lent, mut more) = (Vec::new(), false);
        for list in idle.iter_mut() {
            // One pass from the back: swap_remove only moves in an entry already looked at.
            for at in (0..list.len()).rev() {
                if !due(&list[at]) {
                    more |= list[at].has_queued_end();
                    continue;
                }
                let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                    more = true;
                    break;
                };
                lent.push(PooledConn {
                    conn: Some(list.swap_remove(at)),
                    permit: Some(permit),
                    pool: self.clone(),
                });
            }
        }
        Some((lent, more))
    }

    async fn settle_one(self: &Arc<Self>, mut lent: PooledConn) {
        if let Err(e) = lent.settle().await {
            tracing::debug!(server = %self.server.name, error = %e, "queued end of a read-only transaction failed");
            lent.broken = true;
        }
    }

    /// Periodic upkeep: close stale idle connections, keep min_idle open.
    pub async fn maintain(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed() => return,
            }
            if self.is_retired() {
                return;
            }
            let stale: Vec<Box<BackendConn>> = match self.idle.lock() {
                Ok(mut idle) => idle
                    .iter_mut()
                    .flat_map(|l| drain_where(l, |c| self.expired(c)))
                    .collect(),
                Err(_) => return,
            };
            stale.into_iter().for_each(|c| self.close(c));
            self.top_up().await;
        }
    }

    async fn top_up(self: &Arc<Self>) {
        while self.idle_count() < self.cfg.min_idle && !self.is_down() {
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                return;
            };
            match self.open(Flavour::default()).await {
                Ok(conn) => drop(PooledConn {
                    conn: Some(conn),
                    permit: Some(permit),
                    pool: self.clone(),
                }),
                Err(_) => return,
            }
        }
    }
}

fn drain_where<T>(v: &mut Vec<T>, pred: impl Fn(&T) -> bool) -> Vec<T> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        if pred(&v[i]) {
            out.push(v.swap_remove(i));
        } else {
            i += 1;
        }
    }
    out
}

/// A borrowed connection; returns to its pool when dropped.
pub struct PooledConn {
    /// Boxed: a lent connection moves through several calls per statement as a pointer.
    conn: Option<Box<BackendConn>>,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Pool>,
}

impl PooledConn {
    /// Takes the connection out of the pool's accounting while a session is pinned to it.
    pub fn detach(&mut self) {
        if self.permit.take().is_some() {
            self.pool.stats.pinned.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn is_detached(&self) -> bool {
        self.permit.is_none()
    }

    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

impl Deref for PooledConn {
    type Target = BackendConn;
    fn deref(&self) -> &BackendConn {
        self.conn.as_deref().expect("connection present until drop")
    }
}

impl DerefMut for PooledConn {
    fn deref_mut(&mut self) -> &mut BackendConn {
        self.conn.as_deref_mut().expect("connection present until drop")
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let detached = self.permit.is_none();
            self.pool.give_back(conn, detached);
        }
        drop(self.permit.take());
    }
}

/// A pooled connection is a shard's connection for the scatter executor and the transaction
/// protocol.
impl crate::backend::ShardConn for PooledConn {
    fn queue_query(&mut self, sql: &str) {
        (**self).begin_command(|b| {
            b.extend_from_slice(&[tessera_protocol::command::COM_QUERY]);
            b.extend_from_slice(sql.as_bytes());
        });
    }

    async fn flush(&mut self) -> Result<(), crate::error::ProxyError> {
        (**self).flush().await
    }

    async fn read_ok(&mut self) -> Result<tessera_protocol::response::OkPacket, crate::error::ProxyError> {
        (**self).read_ok().await
    }

    async fn simple_command(
        &mut self,
        sql: &str,
    ) -> Result<tessera_protocol::response::OkPacket, crate::error::ProxyError> {
        (**self).simple_command(sql).await
    }

    async fn query_rows(&mut self, sql: &str) -> Result<crate::backend::conn::TextResult, crate::error::ProxyError> {
        (**self).query_rows(sql).await
    }

    fn broken(&self) -> bool {
        self.broken
    }

    fn mark_broken(&mut self) {
        self.broken = true;
    }

    fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    fn set_in_transaction(&mut self, open: bool) {
        self.in_transaction = open;
    }

    fn side(&self) -> impl std::future::Future<Output = Result<PooledConn, crate::error::ProxyError>> + Send {
        let pool = self.pool().clone();
        let flavour = (**self).flavour();
        async move { pool.checkout(flavour, true).await }
    }

    async fn read_packet(&mut self) -> Result<bytes::Bytes, crate::error::ProxyError> {
        (**self).read().await
    }

    fn lost(&mut self, e: tessera_protocol::ProtocolError) -> crate::error::ProxyError {
        (**self).lost(e)
    }

    fn extended_metadata(&self) -> bool {
        self.extended_metadata
    }

    fn capabilities(&self) -> u32 {
        self.capabilities
    }
}

#[cfg(test)]
mod tests {
    use super::KillMarks;

    #[test]
    fn a_kill_mark_is_taken_once_and_old_marks_make_room() {
        let marks = KillMarks::default();
        assert!(!marks.take(5), "nothing marked");
        marks.mark(5);
        marks.mark(6);
        assert!(!marks.take(7));
        assert!(marks.take(5), "marked");
        assert!(!marks.take(5), "taken once");
        assert!(marks.take(6));
        for t in 0..KillMarks::MAX as u32 + 10 {
            marks.mark(t);
        }
        assert!(!marks.take(0), "the oldest made room");
        assert!(marks.take(KillMarks::MAX as u32 + 9));
        let left = marks.count.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(left, KillMarks::MAX - 1);
    }
}
