//! Failpoints: named steps of the commit protocol where a test makes Tessera abort or pause,
//! set with `TESSERA_FAILPOINTS="name=action,..."`. Actions: `abort` (at the first hit),
//! `abort@N` (at the Nth hit), `delay(MS)`. Unset, a hit costs one empty-map check.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The steps of two-phase commit, in protocol order.
pub const STEPS: [&str; 4] = [
    "xa.before_prepare",
    "xa.after_prepare",
    "xa.after_decision",
    "xa.after_first_commit",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Abort { at: u64 },
    Delay(Duration),
}

/// The failpoints of this process (from the environment at start).
#[derive(Debug, Default)]
pub struct Failpoints {
    points: HashMap<&'static str, (Action, AtomicU64)>,
}

impl Failpoints {
    /// Reads `TESSERA_FAILPOINTS`; an invalid value is an error (a test must not run silently
    /// without its faults).
    pub fn from_env() -> Result<Failpoints, String> {
        match std::env::var("TESSERA_FAILPOINTS") {
            Ok(text) if !text.trim().is_empty() => Failpoints::parse(&text),
            _ => Ok(Failpoints::default()),
        }
    }

    pub fn parse(text: &str) -> Result<Failpoints, String> {
        let mut points = HashMap::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, action) = item
                .split_once('=')
                .ok_or_else(|| format!("failpoint `{item}`: expected name=action"))?;
            let name = STEPS
                .iter()
                .find(|s| **s == name.trim())
                .ok_or_else(|| format!("unknown failpoint `{name}` (known: {})", STEPS.join(", ")))?;
            points.insert(*name, (parse_action(action.trim())?, AtomicU64::new(0)));
        }
        Ok(Failpoints { points })
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Passes step `name`: aborts the process or pauses when a failpoint is set there.
    pub async fn hit(&self, name: &str) {
        if self.points.is_empty() {
            return;
        }
        let Some((action, hits)) = self.points.get(name) else {
            return;
        };
        let n = hits.fetch_add(1, Ordering::Relaxed) + 1;
        match *action {
            Action::Abort { at } if n == at => {
                tracing::error!(failpoint = name, hit = n, "failpoint: aborting the process");
                eprintln!("tessera: failpoint {name}: abort at hit {n}");
                std::process::abort();
            }
            Action::Abort { .. } => {}
            Action::Delay(d) => tokio::time::sleep(d).await,
        }
    }
}

fn parse_action(text: &str) -> Result<Action, String> {
    if text == "abort" {
        return Ok(Action::Abort { at: 1 });
    }
    if let Some(n) = text.strip_prefix("abort@") {
        let at = n.parse::<u64>().ok().filter(|n| *n > 0);
        return at
            .map(|at| Action::Abort { at })
            .ok_or_else(|| format!("failpoint action `{text}`: abort@N needs N >= 1"));
    }
    if let Some(ms) = text.strip_prefix("delay(").and_then(|r| r.strip_suffix(')')) {
        let ms = ms
            .parse::<u64>()
            .map_err(|_| format!("failpoint action `{text}`: delay(MS) needs a number"))?;
        return Ok(Action::Delay(Duration::from_millis(ms)));
    }
    Err(format!(
        "failpoint action `{text}`: expected abort, abort@N or delay(MS)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_and_bad_ones_are_refused() {
        let f = Failpoints::parse("xa.after_prepare=abort@3, xa.after_decision=delay(20)").expect("valid");
        assert_eq!(f.points["xa.after_prepare"].0, Action::Abort { at: 3 });
        assert_eq!(
            f.points["xa.after_decision"].0,
            Action::Delay(Duration::from_millis(20))
        );
        assert!(Failpoints::parse("xa.nowhere=abort").is_err());
        assert!(Failpoints::parse("xa.after_prepare=explode").is_err());
        assert!(Failpoints::parse("xa.after_prepare=abort@0").is_err());
        assert!(Failpoints::parse("").expect("empty").is_empty());
    }

    #[tokio::test]
    async fn an_abort_at_a_later_hit_lets_the_earlier_ones_pass() {
        let f = Failpoints::parse("xa.before_prepare=abort@1000").expect("valid");
        for _ in 0..10 {
            f.hit("xa.before_prepare").await;
        }
        f.hit("xa.after_prepare").await;
        assert_eq!(f.points["xa.before_prepare"].1.load(Ordering::Relaxed), 10);
    }
}
