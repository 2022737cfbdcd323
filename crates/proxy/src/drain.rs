//! Draining before an exit, so that a restart behind a load balancer loses no statement: the
//! health endpoint turns unhealthy first, new clients are still taken until the balancer has
//! seen that (it asked `/health` `server.drain_checks` times since), then the listener
//! closes and each session ends at its first moment outside a transaction.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The process's drain: whether it began, and what the health endpoint answered since.
#[derive(Debug)]
pub struct Drain {
    started: AtomicBool,
    /// Health checks answered so far, and those answered "draining".
    checks: AtomicU64,
    unhealthy_answers: AtomicU64,
    /// When the health endpoint was last asked, and the time before, in ms after `born`
    /// (0: never): a balancer checks at a steady interval.
    last_check_ms: AtomicU64,
    previous_check_ms: AtomicU64,
    born: Instant,
    /// Wakes [`Drain::wait_for_balancer`] and the wait for the last session.
    progress: Notify,
}

impl Default for Drain {
    fn default() -> Self {
        Drain {
            started: AtomicBool::new(false),
            checks: AtomicU64::new(0),
            unhealthy_answers: AtomicU64::new(0),
            last_check_ms: AtomicU64::new(0),
            previous_check_ms: AtomicU64::new(0),
            born: Instant::now(),
            progress: Notify::new(),
        }
    }
}

impl Drain {
    /// The drain begins: from now on the health endpoint answers unhealthy.
    pub fn begin(&self) {
        self.started.store(true, Ordering::SeqCst);
        self.progress.notify_waiters();
    }

    pub fn is_draining(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    /// The health endpoint was asked; whether it answers "draining" (counted).
    pub fn health_checked(&self) -> bool {
        self.checks.fetch_add(1, Ordering::Relaxed);
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX) + 1;
        let previous = self.last_check_ms.swap(ms, Ordering::Relaxed);
        self.previous_check_ms.store(previous, Ordering::Relaxed);
        if !self.is_draining() {
            return false;
        }
        self.unhealthy_answers.fetch_add(1, Ordering::SeqCst);
        self.progress.notify_waiters();
        true
    }

    /// Health checks answered so far.
    pub fn checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// Health checks answered "draining" so far.
    pub fn unhealthy_answers(&self) -> u64 {
        self.unhealthy_answers.load(Ordering::SeqCst)
    }

    /// When the next health check is due at the latest, if something checks at an interval
    /// (two checks seen): twice the last interval and half a second after the last check.
    fn next_check_due(&self) -> Option<tokio::time::Instant> {
        let (last, previous) = (
            self.last_check_ms.load(Ordering::Relaxed),
            self.previous_check_ms.load(Ordering::Relaxed),
        );
        if previous == 0 || last < previous {
            return None;
        }
        let gap = Duration::from_millis((last - previous).max(100) * 2 + 500);
        Some(tokio::time::Instant::from_std(
            self.born + Duration::from_millis(last - 1) + gap,
        ))
    }

    /// Waits until the health endpoint has answered `checks` checks since the drain began, at
    /// most `max`, and only while checks keep coming at their interval (at once when nothing
    /// checks: no balancer in front). Whether the balancer was seen to notice.
    pub async fn wait_for_balancer(&self, checks: u64, max: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + max;
        loop {
            let progress = self.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            if self.unhealthy_answers() >= checks {
                return true;
            }
            let Some(due) = self.next_check_due() else {
                return false;
            };
            if tokio::time::timeout_at(due.min(deadline), progress).await.is_err() {
                return false;
            }
        }
    }

    /// A session ended (wakes a drain that waits for the last one).
    pub fn session_ended(&self) {
        if self.is_draining() {
            self.progress.notify_waiters();
        }
    }

    /// Waits until `done()` holds, checking at each progress, at most until `deadline`;
    /// whether it holds.
    pub async fn wait_until(&self, done: impl Fn() -> bool, deadline: tokio::time::Instant) -> bool {
        loop {
            let progress = self.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            if done() {
                return true;
            }
            if tokio::time::timeout_at(deadline, progress).await.is_err() {
                return done();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_drain_waits_for_the_balancers_checks_only_when_one_checks() {
        let unwatched = Drain::default();
        unwatched.begin();
        assert!(
            !unwatched.wait_for_balancer(3, Duration::from_secs(60)).await,
            "nobody checks: no wait"
        );

        let once = Drain::default();
        once.health_checked();
        once.begin();
        assert!(
            !once.wait_for_balancer(3, Duration::from_secs(60)).await,
            "one check is no balancer"
        );

        let drain = Arc::new(Drain::default());
        assert!(!drain.health_checked(), "healthy before the drain");
        assert!(!drain.health_checked(), "checked again: a balancer's interval");
        drain.begin();
        let waiting = tokio::spawn({
            let drain = drain.clone();
            async move { drain.wait_for_balancer(2, Duration::from_secs(60)).await }
        });
        assert!(drain.health_checked(), "draining");
        while drain.unhealthy_answers() < 1 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        drain.health_checked();
        assert!(
            waiting.await.expect("joined"),
            "two checks answered: the balancer knows"
        );
    }

    #[tokio::test]
    async fn a_drain_waits_for_a_condition_woken_by_sessions_ending() {
        let drain = Arc::new(Drain::default());
        drain.begin();
        let left = Arc::new(AtomicU64::new(1));
        let waiting = tokio::spawn({
            let (drain, left) = (drain.clone(), left.clone());
            async move {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                drain.wait_until(|| left.load(Ordering::SeqCst) == 0, deadline).await
            }
        });
        tokio::task::yield_now().await;
        left.store(0, Ordering::SeqCst);
        drain.session_ended();
        assert!(waiting.await.expect("joined"));
    }
}
