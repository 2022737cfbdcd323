//! Live client sessions by connection id, so that `KILL [QUERY] id` can find the backend
//! connection that runs that client's statement. Each statement's turn on a backend connection
//! has an epoch: a KILL checks that the connection still runs the same turn before it
//! interrupts the query, so it never reaches another session's statement on a pooled connection.

use crate::backend::ServerRef;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// What the registry knows about one session.
#[derive(Debug)]
pub struct SessionHandle {
    pub id: u32,
    pub user: Mutex<String>,
    /// The backend connection running this session's current statement, and its epoch.
    running: Mutex<Option<Running>>,
    epochs: std::sync::atomic::AtomicU64,
    killed: AtomicBool,
    pub kill_signal: Notify,
}

/// A session's statement on a backend connection.
#[derive(Debug, Clone)]
pub struct Running {
    pub server: ServerRef,
    pub thread_id: u32,
    pub epoch: u64,
}

impl SessionHandle {
    /// Records the backend connection (server, thread id) the session's statement runs on, or
    /// that it runs on none; either starts a new epoch.
    pub fn set_running(&self, target: Option<(ServerRef, u32)>) {
        let epoch = self.epochs.fetch_add(1, Ordering::SeqCst) + 1;
        if let Ok(mut r) = self.running.lock() {
            *r = target.map(|(server, thread_id)| Running {
                server,
                thread_id,
                epoch,
            });
        }
    }

    pub fn running(&self) -> Option<Running> {
        self.running.lock().ok().and_then(|r| r.clone())
    }

    /// True while the session still runs the statement `running()` returned with `epoch`.
    pub fn still_running(&self, epoch: u64) -> bool {
        self.running
            .lock()
            .ok()
            .is_some_and(|r| r.as_ref().is_some_and(|r| r.epoch == epoch))
    }

    /// Asks the session to close its connection (KILL CONNECTION).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.kill_signal.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    pub fn user(&self) -> String {
        self.user.lock().map(|u| u.clone()).unwrap_or_default()
    }
}

/// All live sessions.
#[derive(Debug, Default)]
pub struct SessionRegistry {
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
}

impl SessionRegistry {
    pub fn register(&self, id: u32, user: &str) -> Arc<SessionHandle> {
        let handle = Arc::new(SessionHandle {
            id,
            user: Mutex::new(user.to_string()),
            running: Mutex::new(None),
            epochs: Default::default(),
            killed: AtomicBool::new(false),
            kill_signal: Notify::new(),
        });
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(id, handle.clone());
        }
        handle
    }

    pub fn unregister(&self, id: u32) {
        if let Ok(mut s) = self.sessions.lock() {
            s.remove(&id);
        }
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
