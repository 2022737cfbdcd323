//! Live client sessions by connection id, so that `KILL [QUERY] id` can find the backend
//! connection that runs that client's statement.

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
    /// The backend connection running this session's current statement.
    running: Mutex<Option<(ServerRef, u32)>>,
    killed: AtomicBool,
    pub kill_signal: Notify,
}

impl SessionHandle {
    pub fn set_running(&self, target: Option<(ServerRef, u32)>) {
        if let Ok(mut r) = self.running.lock() {
            *r = target;
        }
    }

    pub fn running(&self) -> Option<(ServerRef, u32)> {
        self.running.lock().ok().and_then(|r| r.clone())
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
