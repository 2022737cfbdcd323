//! Live client sessions by connection id, so that `KILL [QUERY] id` can find the backend
//! connection that runs that client's statement. Each statement's turn on a backend connection
//! has an epoch: a KILL marks the connection in its pool (so that it is closed, not lent again,
//! when it comes back) and then checks that the connection still runs the same turn before it
//! interrupts the statement, so it never reaches another session's statement on a pooled
//! connection (see `Session::kill`).

use crate::backend::ServerRef;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// What the registry knows about one session.
#[derive(Debug)]
pub struct SessionHandle {
    pub id: u32,
    pub user: Mutex<String>,
    /// The client's address, as the process list shows it.
    pub host: String,
    /// When the session logged in: [`SessionHandle::activity`] counts from here.
    connected: Instant,
    /// Milliseconds since `connected` at which the session's last command started (bit 0
    /// set: it runs now) or ended: the process list's Command and Time.
    activity: AtomicU64,
    /// The session's default database, as the process list shows it.
    db: Mutex<Option<String>>,
    /// The statement turn: its epoch (bits 1..) and whether it runs on a backend connection
    /// now (bit 0). Written only by the session, once per turn, without a lock.
    turn: AtomicU64,
    /// The backend connection(s) of the last turn that ran on one (its `epoch` unused: the turn
    /// says which epoch it belongs to).
    recorded: Mutex<Option<Running>>,
    /// The server and thread id in `recorded` when it holds one connection (null otherwise),
    /// so that a turn on the same connection as the last one takes no lock.
    recorded_server: AtomicPtr<crate::backend::ServerInfo>,
    recorded_thread: AtomicU32,
    killed: AtomicBool,
    /// The process drains: the session ends at its first moment outside a transaction.
    draining: AtomicBool,
    /// The backend connection (server address, thread id) the session holds user locks on
    /// (GET_LOCK), so that IS_USED_LOCK() can answer the holder's Tessera connection id.
    user_lock_conn: Mutex<Option<(String, u32)>>,
    /// KILLs aimed at this session so far (see [`SessionHandle::request_interrupt`]).
    kill_requests: AtomicU64,
    /// The command loop waiting for the client, woken by [`SessionHandle::kill`]. One lock
    /// per wait and nothing to unregister: cheaper per command than a `Notify` and a `watch`.
    stop_waker: Mutex<Option<Waker>>,
}

/// A session's statement on a backend connection.
#[derive(Debug, Clone)]
pub struct Running {
    pub server: ServerRef,
    pub thread_id: u32,
    pub epoch: u64,
    /// The other backend connections of a statement that runs on several shards.
    pub more: Vec<(ServerRef, u32)>,
    /// A pipelined lane's connection, which runs other sessions' statements too.
    pub shared: bool,
}

impl Running {
    /// Every (server, thread id) the statement runs on.
    pub fn connections(&self) -> impl Iterator<Item = (&ServerRef, u32)> {
        std::iter::once((&self.server, self.thread_id)).chain(self.more.iter().map(|(s, t)| (s, *t)))
    }
}

impl SessionHandle {
    /// Records the backend connection (server, thread id) the session's statement runs on, or
    /// that it runs on none; either starts a new epoch. Only the session calls it.
    pub fn set_running(&self, target: Option<(&ServerRef, u32)>) {
        let running = match target {
            None => false,
            Some((server, thread_id)) => {
                let same = std::ptr::eq(self.recorded_server.load(Ordering::Relaxed), Arc::as_ptr(server))
                    && self.recorded_thread.load(Ordering::Relaxed) == thread_id;
                if !same {
                    self.record(Some(Running {
                        server: server.clone(),
                        thread_id,
                        epoch: 0,
                        more: Vec::new(),
                        shared: false,
                    }));
                }
                true
            }
        };
        self.next_turn(running);
    }

    /// [`SessionHandle::set_running`] for a statement on several backend connections (shards).
    pub fn set_running_all(&self, mut targets: Vec<(ServerRef, u32)>) {
        let first = (!targets.is_empty()).then(|| targets.remove(0));
        let running = first.is_some();
        self.record(first.map(|(server, thread_id)| Running {
            server,
            thread_id,
            epoch: 0,
            more: targets,
            shared: false,
        }));
        self.next_turn(running);
    }

    /// [`SessionHandle::set_running`] for a statement queued on a pipelined lane's connection.
    pub fn set_running_shared(&self, server: &ServerRef, thread_id: u32) {
        self.record(Some(Running {
            server: server.clone(),
            thread_id,
            epoch: 0,
            more: Vec::new(),
            shared: true,
        }));
        self.next_turn(true);
    }

    /// Stores the connection(s) a turn about to start runs on (before the turn is published).
    fn record(&self, running: Option<Running>) {
        let single = running.as_ref().filter(|r| r.more.is_empty() && !r.shared);
        let server = single.map_or(std::ptr::null(), |r| Arc::as_ptr(&r.server));
        self.recorded_thread
            .store(single.map_or(0, |r| r.thread_id), Ordering::Relaxed);
        if let Ok(mut r) = self.recorded.lock() {
            *r = running;
        }
        self.recorded_server.store(server.cast_mut(), Ordering::Relaxed);
    }

    /// Publishes the next turn: a reader that sees it sees what [`Self::record`] stored before.
    /// Sequentially consistent, with [`Self::still_running`]: a KILL that marked a connection
    /// in its pool and then finds the turn still running is sure that the connection comes
    /// back to the pool after the mark (see [`crate::pool::Pool::mark_killed`]).
    fn next_turn(&self, running: bool) {
        let epoch = (self.turn.load(Ordering::Relaxed) >> 1) + 1;
        self.turn.store(epoch << 1 | u64::from(running), Ordering::SeqCst);
    }

    pub fn running(&self) -> Option<Running> {
        // A turn that changes while it is read is read again (the session moved on).
        for _ in 0..8 {
            let turn = self.turn.load(Ordering::Acquire);
            if turn & 1 == 0 {
                return None;
            }
            let recorded = self.recorded.lock().ok().and_then(|r| r.clone());
            if self.turn.load(Ordering::Acquire) == turn {
                return recorded.map(|r| Running { epoch: turn >> 1, ..r });
            }
        }
        None
    }

    /// True while the session still runs the statement `running()` returned with `epoch`.
    pub fn still_running(&self, epoch: u64) -> bool {
        self.turn.load(Ordering::SeqCst) == epoch << 1 | 1
    }

    /// Counts a KILL aimed at the session, before the KILL reads [`Self::running`]. A session
    /// that publishes a turn only after it sent the statement (a scatter, a pipelined lane)
    /// reads the count before sending and again after publishing: a KILL that came between
    /// found no turn to interrupt, and the session sees the count moved
    /// ([`crate::session::Session::catch_up_kill`]). Both sides are sequentially consistent,
    /// so one of the two always sees the other.
    pub fn request_interrupt(&self) {
        self.kill_requests.fetch_add(1, Ordering::SeqCst);
    }

    /// The KILLs aimed at the session so far.
    pub fn kill_requests(&self) -> u64 {
        self.kill_requests.load(Ordering::SeqCst)
    }

    /// Asks the session to close its connection (KILL CONNECTION, shutdown): at once while it
    /// waits for a command, else once its statement has answered.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        let waker = self.stop_waker.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Asks the session to end at its first moment outside a transaction (a drain): at once
    /// when it waits for a command outside one.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
        let waker = self.stop_waker.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Resolves once the session is killed, or drained while `between_transactions`.
    pub fn stopped(&self, between_transactions: bool) -> impl Future<Output = ()> + '_ {
        let stop = move || self.is_killed() || (between_transactions && self.is_draining());
        std::future::poll_fn(move |cx| {
            if stop() {
                return Poll::Ready(());
            }
            if let Ok(mut w) = self.stop_waker.lock() {
                match w.as_ref() {
                    Some(have) if have.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
            }
            // A kill between the first check and the registration finds the waker or is seen here.
            match stop() {
                true => Poll::Ready(()),
                false => Poll::Pending,
            }
        })
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    pub fn user(&self) -> String {
        self.user.lock().map(|u| u.clone()).unwrap_or_default()
    }

    /// A command starts (`busy`) or ends: the process list's Command and Time.
    pub fn set_busy(&self, busy: bool) {
        let ms = u64::try_from(self.connected.elapsed().as_millis()).unwrap_or(u64::MAX >> 1);
        self.activity.store(ms << 1 | u64::from(busy), Ordering::Relaxed);
    }

    /// Whether a command runs now, and for how long it has run (or the session has waited).
    pub fn activity(&self) -> (bool, Duration) {
        let a = self.activity.load(Ordering::Relaxed);
        let since = self.connected + Duration::from_millis(a >> 1);
        (a & 1 == 1, since.elapsed())
    }

    /// Publishes the session's default database when it changed.
    pub fn set_db(&self, db: Option<&str>) {
        if let Ok(mut current) = self.db.lock() {
            if current.as_deref() != db {
                *current = db.map(str::to_string);
            }
        }
    }

    pub fn db(&self) -> Option<String> {
        self.db.lock().ok().and_then(|d| d.clone())
    }

    /// Records the connection the session holds user locks on, or that it holds none.
    pub fn set_user_lock_conn(&self, conn: Option<(&str, u32)>) {
        if let Ok(mut held) = self.user_lock_conn.lock() {
            *held = conn.map(|(address, thread)| (address.to_string(), thread));
        }
    }
}

/// All live sessions.
#[derive(Debug, Default)]
pub struct SessionRegistry {
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
    /// Set by [`SessionRegistry::kill_all`]: sessions registered later start killed.
    closing: AtomicBool,
    /// Set by [`SessionRegistry::drain_all`]: sessions registered later start drained.
    draining: AtomicBool,
}

impl SessionRegistry {
    pub fn register(&self, id: u32, user: &str, host: &str) -> Arc<SessionHandle> {
        let handle = Arc::new(SessionHandle {
            id,
            user: Mutex::new(user.to_string()),
            host: host.to_string(),
            connected: Instant::now(),
            activity: AtomicU64::new(0),
            db: Mutex::new(None),
            turn: AtomicU64::new(0),
            recorded: Mutex::new(None),
            recorded_server: AtomicPtr::new(std::ptr::null_mut()),
            recorded_thread: AtomicU32::new(0),
            killed: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            user_lock_conn: Mutex::new(None),
            kill_requests: AtomicU64::new(0),
            stop_waker: Mutex::new(None),
        });
        if let Ok(mut s) = self.sessions.lock() {
            if self.closing.load(Ordering::SeqCst) {
                handle.kill();
            }
            if self.draining.load(Ordering::SeqCst) {
                handle.drain();
            }
            s.insert(id, handle.clone());
        }
        handle
    }

    /// Shutdown: every session closes once its current statement (if any) has answered.
    pub fn kill_all(&self) {
        if let Ok(s) = self.sessions.lock() {
            self.closing.store(true, Ordering::SeqCst);
            s.values().for_each(|h| h.kill());
        }
    }

    /// A drain: every session ends at its first moment outside a transaction.
    pub fn drain_all(&self) {
        if let Ok(s) = self.sessions.lock() {
            self.draining.store(true, Ordering::SeqCst);
            s.values().for_each(|h| h.drain());
        }
    }

    pub fn unregister(&self, id: u32) {
        if let Ok(mut s) = self.sessions.lock() {
            s.remove(&id);
        }
    }

    /// (backend thread id, session id) of every session holding user locks on a connection
    /// to `address`.
    pub fn user_lock_holders(&self, address: &str) -> Vec<(u32, u32)> {
        let Ok(sessions) = self.sessions.lock() else {
            return Vec::new();
        };
        sessions
            .values()
            .filter_map(|h| {
                let held = h.user_lock_conn.lock().ok()?;
                let (a, thread) = held.as_ref()?;
                (a == address).then_some((*thread, h.id))
            })
            .collect()
    }

    /// The sessions of `user`, by connection id: what its process list shows.
    pub fn sessions_of(&self, user: &str) -> Vec<Arc<SessionHandle>> {
        let Ok(sessions) = self.sessions.lock() else {
            return Vec::new();
        };
        let mut out: Vec<Arc<SessionHandle>> = sessions.values().filter(|h| h.user() == user).cloned().collect();
        out.sort_by_key(|h| h.id);
        out
    }

    pub fn get(&self, id: u32) -> Option<Arc<SessionHandle>> {
        self.sessions.lock().ok().and_then(|s| s.get(&id).cloned())
    }

    pub fn len(&self) -> usize {
        self.sessions.lock().map(|s| s.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ServerInfo;

    #[test]
    fn a_statement_turn_ends_when_the_connection_is_given_back() {
        let registry = SessionRegistry::default();
        let handle = registry.register(7, "app", "127.0.0.1");
        let server = Arc::new(ServerInfo {
            name: "s".into(),
            address: "127.0.0.1:1".into(),
            user: "u".into(),
            password: String::new(),
            tls: false,
        });
        handle.set_running(Some((&server, 42)));
        let first = handle.running().expect("running");
        assert_eq!(first.thread_id, 42);
        assert!(handle.still_running(first.epoch));
        handle.set_running(None);
        assert!(!handle.still_running(first.epoch), "released");
        handle.set_running(Some((&server, 42)));
        let second = handle.running().expect("running again");
        assert_ne!(second.epoch, first.epoch, "same connection, a new turn");
        assert!(!handle.still_running(first.epoch));
        handle.set_running(Some((&server, 43)));
        assert_eq!(handle.running().map(|r| r.thread_id), Some(43), "another connection");
        handle.set_running_all(vec![(server.clone(), 44), (server.clone(), 45)]);
        let all = handle.running().expect("on two shards");
        assert_eq!(all.connections().map(|(_, t)| t).collect::<Vec<_>>(), [44, 45]);
        handle.set_running(Some((&server, 44)));
        let single = handle.running().expect("on one again");
        assert!(single.more.is_empty() && single.thread_id == 44, "{single:?}");
        handle.set_running_shared(&server, 46);
        let lane = handle.running().expect("on a lane");
        assert!(lane.shared && lane.thread_id == 46, "{lane:?}");
        let seen = handle.kill_requests();
        handle.request_interrupt();
        assert_eq!(handle.kill_requests(), seen + 1);
        handle.set_running(Some((&server, 46)));
        let own = handle.running().expect("on its own");
        assert!(!own.shared, "a new turn, not a lane's: {own:?}");
        handle.set_running(None);
        assert!(handle.running().is_none());
        assert_eq!(registry.get(7).map(|h| h.user()), Some("app".to_string()));
    }
}
