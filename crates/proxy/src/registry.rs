//! Live client sessions by connection id, so that `KILL [QUERY] id` can find the backend
//! connection that runs that client's statement. Each statement's turn on a backend connection
//! has an epoch: a KILL checks that the connection still runs the same turn before it
//! interrupts the query, so it never reaches another session's statement on a pooled connection.

use crate::backend::ServerRef;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

/// What the registry knows about one session.
#[derive(Debug)]
pub struct SessionHandle {
    pub id: u32,
    pub user: Mutex<String>,
    /// The last epoch handed out, and the backend connection running this session's current
    /// statement (with its epoch).
    running: Mutex<(u64, Option<Running>)>,
    killed: AtomicBool,
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
}

impl Running {
    /// Every (server, thread id) the statement runs on.
    pub fn connections(&self) -> impl Iterator<Item = (&ServerRef, u32)> {
        std::iter::once((&self.server, self.thread_id)).chain(self.more.iter().map(|(s, t)| (s, *t)))
    }
}

impl SessionHandle {
    /// Records the backend connection (server, thread id) the session's statement runs on, or
    /// that it runs on none; either starts a new epoch.
    pub fn set_running(&self, target: Option<(ServerRef, u32)>) {
        if let Ok(mut r) = self.running.lock() {
            let epoch = r.0 + 1;
            *r = (
                epoch,
                target.map(|(server, thread_id)| Running {
                    server,
                    thread_id,
                    epoch,
                    more: Vec::new(),
                }),
            );
        }
    }

    /// [`SessionHandle::set_running`] for a statement on several backend connections (shards).
    pub fn set_running_all(&self, mut targets: Vec<(ServerRef, u32)>) {
        if let Ok(mut r) = self.running.lock() {
            let epoch = r.0 + 1;
            let first = (!targets.is_empty()).then(|| targets.remove(0));
            *r = (
                epoch,
                first.map(|(server, thread_id)| Running {
                    server,
                    thread_id,
                    epoch,
                    more: targets,
                }),
            );
        }
    }

    pub fn running(&self) -> Option<Running> {
        self.running.lock().ok().and_then(|r| r.1.clone())
    }

    /// True while the session still runs the statement `running()` returned with `epoch`.
    pub fn still_running(&self, epoch: u64) -> bool {
        self.running
            .lock()
            .ok()
            .is_some_and(|r| r.1.as_ref().is_some_and(|r| r.epoch == epoch))
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

    /// Resolves once the session is killed.
    pub fn killed(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.is_killed() {
                return Poll::Ready(());
            }
            if let Ok(mut w) = self.stop_waker.lock() {
                match w.as_ref() {
                    Some(have) if have.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
            }
            // A kill between the first check and the registration finds the waker or is seen here.
            match self.is_killed() {
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
}

/// All live sessions.
#[derive(Debug, Default)]
pub struct SessionRegistry {
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
    /// Set by [`SessionRegistry::kill_all`]: sessions registered later start killed.
    closing: AtomicBool,
}

impl SessionRegistry {
    pub fn register(&self, id: u32, user: &str) -> Arc<SessionHandle> {
        let handle = Arc::new(SessionHandle {
            id,
            user: Mutex::new(user.to_string()),
            running: Mutex::new((0, None)),
            killed: AtomicBool::new(false),
            stop_waker: Mutex::new(None),
        });
        if let Ok(mut s) = self.sessions.lock() {
            if self.closing.load(Ordering::SeqCst) {
                handle.kill();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ServerInfo;

    #[test]
    fn a_statement_turn_ends_when_the_connection_is_given_back() {
        let registry = SessionRegistry::default();
        let handle = registry.register(7, "app");
        let server = Arc::new(ServerInfo {
            name: "s".into(),
            address: "127.0.0.1:1".into(),
            user: "u".into(),
            password: String::new(),
            tls: false,
        });
        handle.set_running(Some((server.clone(), 42)));
        let first = handle.running().expect("running");
        assert_eq!(first.thread_id, 42);
        assert!(handle.still_running(first.epoch));
        handle.set_running(None);
        assert!(!handle.still_running(first.epoch), "released");
        handle.set_running(Some((server, 42)));
        let second = handle.running().expect("running again");
        assert_ne!(second.epoch, first.epoch, "same connection, a new turn");
        assert!(!handle.still_running(first.epoch));
        assert_eq!(registry.get(7).map(|h| h.user()), Some("app".to_string()));
    }
}
