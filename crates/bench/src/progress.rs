//! Progress on the terminal during long runs: which run, elapsed time and an ETA.

use std::time::Instant;

/// Counts planned work in seconds (run time plus a per-run overhead) and extrapolates.
pub struct Progress {
    started: Instant,
    runs_total: usize,
    runs_done: usize,
    planned_total: f64,
    planned_done: f64,
}

impl Progress {
    /// `runs_total` steps that should take about `planned_total` seconds.
    pub fn new(runs_total: usize, planned_total: f64) -> Progress {
        Progress {
            started: Instant::now(),
            runs_total,
            runs_done: 0,
            planned_total,
            planned_done: 0.0,
        }
    }

    /// Prints the line for the step about to start.
    pub fn starting(&self, label: &str) {
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = eta_secs(elapsed, self.planned_done, self.planned_total);
        eprintln!(
            "[{:>3}/{}] {label}  (elapsed {}, ETA {})",
            self.runs_done + 1,
            self.runs_total,
            human(elapsed),
            human(eta)
        );
    }

    /// Marks a step of `planned` seconds as done.
    pub fn finished(&mut self, planned: f64) {
        self.runs_done += 1;
        self.planned_done += planned;
    }

    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// Remaining seconds: the remaining plan, scaled by how long the plan has really taken so far.
pub fn eta_secs(elapsed: f64, planned_done: f64, planned_total: f64) -> f64 {
    let remaining = (planned_total - planned_done).max(0.0);
    if planned_done <= 0.0 || elapsed <= 0.0 {
        return remaining;
    }
    remaining * (elapsed / planned_done)
}

/// `75.0` -> `"1m15s"`, `3725.0` -> `"1h02m"`.
pub fn human(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_scales_the_remaining_plan_by_the_observed_pace() {
        assert_eq!(eta_secs(0.0, 0.0, 100.0), 100.0);
        // Half the plan done in 60 s instead of 50 s: the rest takes 60 s as well.
        assert_eq!(eta_secs(60.0, 50.0, 100.0), 60.0);
        assert_eq!(eta_secs(10.0, 100.0, 100.0), 0.0);
    }

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(human(0.4), "0s");
        assert_eq!(human(75.0), "1m15s");
        assert_eq!(human(3725.0), "1h02m");
    }
}
