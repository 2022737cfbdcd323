//! `tessera ctl`: the operator's side of the fleet. Publish a configuration file as a new
//! version and watch the rollout, compare versions, list the history, show a version, roll
//! back, and list the live proxies with what each runs.

use super::etcd::Etcd;
use super::keys::Keys;
use super::member::{members, Member};
use super::versions::{self, Publish, Version};
use super::FleetError;
use std::time::Duration;

/// The usage text of `tessera ctl`.
pub const USAGE: &str = "\
usage: tessera ctl --etcd URLS --cluster NAME COMMAND
  publish FILE [-m MESSAGE] [--force] [--wait SECONDS]
                     publish FILE (the shared configuration) as a new version, then wait
                     (default 10 s) for every live proxy to run or refuse it; --force
                     skips the check that it validates
  rollback [--to N] [-m MESSAGE] [--wait SECONDS]
                     publish version N's document again as a new version (default: the
                     newest version before the head that a live proxy runs)
  diff [FILE | A B]  what FILE (or version B) changes against the head (or version A)
  history            every version: number, time, publisher, message
  show [N]           version N's document (default: the head)
  status             every live proxy: id, name, addresses, version and generation it runs,
                     what it refused";

/// What a command printed, and whether it did what was asked (the exit status).
pub struct Outcome {
    pub text: String,
    pub ok: bool,
}

/// Runs `tessera ctl` with its arguments (after `ctl`).
pub async fn run(args: &[String]) -> Result<Outcome, FleetError> {
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let usage = |what: &str| FleetError::Usage(format!("{what}\n{USAGE}"));
    let etcd = Etcd::new(&flag("--etcd").ok_or_else(|| usage("missing --etcd URLS"))?)?;
    let keys =
        Keys::new(&flag("--cluster").ok_or_else(|| usage("missing --cluster NAME"))?).map_err(FleetError::Usage)?;
    let words = positional(args, &["--etcd", "--cluster", "-m", "--wait", "--to"], &["--force"]);
    let wait = match flag("--wait") {
        Some(s) => Duration::from_secs(
            s.parse()
                .map_err(|_| usage(&format!("--wait: `{s}` is not a number of seconds")))?,
        ),
        None => Duration::from_secs(10),
    };
    let message = flag("-m").unwrap_or_default();
    let ctl = Ctl { etcd, keys };
    match words.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["publish", file] => {
            let text = std::fs::read_to_string(file).map_err(|e| usage(&format!("{file}: {e}")))?;
            let force = args.iter().any(|a| a == "--force");
            ctl.publish(&text, &message, None, force, wait).await
        }
        ["rollback"] => ctl.rollback(flag("--to"), &message, wait).await,
        ["diff"] => ctl.diff_text(None, None).await,
        ["diff", file] => {
            let text = std::fs::read_to_string(file).map_err(|e| usage(&format!("{file}: {e}")))?;
            ctl.diff_text(None, Some(text)).await
        }
        ["diff", a, b] => ctl.diff_versions(number(a)?, number(b)?).await,
        ["history"] => ctl.history().await,
        ["show"] => ctl.show(None).await,
        ["show", n] => ctl.show(Some(number(n)?)).await,
        ["status"] => Ok(Outcome {
            text: status_table(&members(&ctl.etcd, &ctl.keys).await?),
            ok: true,
        }),
        _ => Err(usage("unknown or incomplete command")),
    }
}

/// The arguments that are not options or option values.
fn positional(args: &[String], with_value: &[&str], switches: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if with_value.contains(&a.as_str()) {
            it.next();
        } else if !switches.contains(&a.as_str()) {
            out.push(a.clone());
        }
    }
    out
}

fn number(text: &str) -> Result<u64, FleetError> {
    text.trim_start_matches('v')
        .parse()
        .map_err(|_| FleetError::Usage(format!("`{text}` is not a version number")))
}

struct Ctl {
    etcd: Etcd,
    keys: Keys,
}

impl Ctl {
    async fn publish(
        &self,
        text: &str,
        message: &str,
        rollback_of: Option<u64>,
        force: bool,
        wait: Duration,
    ) -> Result<Outcome, FleetError> {
        if !force {
            tessera_config::fleet::compose(text, "the file to publish", &tessera_config::fleet::placeholder_local())?;
        }
        let by = publisher();
        let n = versions::publish(
            &self.etcd,
            &self.keys,
            &Publish {
                toml: text,
                by: &by,
                message,
                rollback_of,
            },
        )
        .await?;
        let mut out = format!("published version {n}\n");
        let (settled, table) = self.rollout(n, wait).await?;
        out.push_str(&table);
        Ok(Outcome { text: out, ok: settled })
    }

    async fn rollback(&self, to: Option<String>, message: &str, wait: Duration) -> Result<Outcome, FleetError> {
        let (head, _) = versions::head(&self.etcd, &self.keys)
            .await?
            .ok_or_else(|| FleetError::Usage("nothing is published yet, so there is nothing to roll back".into()))?;
        let target = match to {
            Some(t) => number(&t)?,
            None => self.previous_head(head).await?,
        };
        let old = versions::get(&self.etcd, &self.keys, target).await?;
        let message = match message {
            "" => format!("rollback to version {target}"),
            m => m.to_string(),
        };
        self.publish(&old.toml, &message, Some(target), true, wait).await
    }

    /// What a rollback without `--to` brings back: the newest version before the head that
    /// a live proxy runs (the last one the fleet took), else the one before the head.
    async fn previous_head(&self, head: u64) -> Result<u64, FleetError> {
        let fleet = members(&self.etcd, &self.keys).await?;
        let running = fleet
            .iter()
            .map(|m| m.config_version)
            .filter(|v| *v < head && *v > 0)
            .max();
        match running.or(head.checked_sub(1).filter(|v| *v > 0)) {
            Some(v) => Ok(v),
            None => Err(FleetError::Usage(format!(
                "version {head} is the only one: nothing to roll back to"
            ))),
        }
    }

    /// Waits until every live proxy runs or refused version `n` (or `wait` passed); whether
    /// all run it, and the table of who runs what.
    async fn rollout(&self, n: u64, wait: Duration) -> Result<(bool, String), FleetError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let fleet = members(&self.etcd, &self.keys).await?;
            let settled = fleet
                .iter()
                .all(|m| m.config_version == n || m.refused.as_ref().is_some_and(|r| r.version == n));
            if settled || tokio::time::Instant::now() >= deadline {
                let running = fleet.iter().filter(|m| m.config_version == n).count();
                let refused = fleet
                    .iter()
                    .filter(|m| m.refused.as_ref().is_some_and(|r| r.version == n))
                    .count();
                let pending = fleet.len() - running - refused;
                let summary = match fleet.len() {
                    0 => format!("no proxy is live: version {n} is what the next one to start runs\n"),
                    all => format!(
                        "rollout of version {n}: {running} of {all} proxies run it, {refused} refused, {pending} have not answered\n"
                    ),
                };
                return Ok((running == fleet.len(), status_table(&fleet) + &summary));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn diff_text(&self, base: Option<u64>, text: Option<String>) -> Result<Outcome, FleetError> {
        let (head, _) = versions::head(&self.etcd, &self.keys).await?.unwrap_or((0, 0));
        let base = base.unwrap_or(head);
        let old = if base == 0 {
            String::new()
        } else {
            versions::get(&self.etcd, &self.keys, base).await?.toml
        };
        let new = match text {
            Some(t) => t,
            None => return Err(FleetError::Usage(format!("diff needs a FILE or two versions\n{USAGE}"))),
        };
        Ok(Outcome {
            text: diff(&old, &new, &format!("version {base}"), "the file"),
            ok: true,
        })
    }

    async fn diff_versions(&self, a: u64, b: u64) -> Result<Outcome, FleetError> {
        let old = versions::get(&self.etcd, &self.keys, a).await?;
        let new = versions::get(&self.etcd, &self.keys, b).await?;
        Ok(Outcome {
            text: diff(&old.toml, &new.toml, &format!("version {a}"), &format!("version {b}")),
            ok: true,
        })
    }

    async fn history(&self) -> Result<Outcome, FleetError> {
        let head = versions::head(&self.etcd, &self.keys).await?.map_or(0, |h| h.0);
        let mut text = String::from("version\tpublished (UTC)\tby\tmessage\n");
        for v in versions::history(&self.etcd, &self.keys).await? {
            text.push_str(&history_line(&v, head));
        }
        Ok(Outcome {
            text: crate::admin::align_columns(&text),
            ok: true,
        })
    }

    async fn show(&self, n: Option<u64>) -> Result<Outcome, FleetError> {
        let n = match n {
            Some(n) => n,
            None => {
                versions::head(&self.etcd, &self.keys)
                    .await?
                    .ok_or_else(|| FleetError::Usage("nothing is published yet".into()))?
                    .0
            }
        };
        Ok(Outcome {
            text: versions::get(&self.etcd, &self.keys, n).await?.toml,
            ok: true,
        })
    }
}

fn history_line(v: &Version, head: u64) -> String {
    let mark = if v.version == head { " (head)" } else { "" };
    let message = match v.rollback_of {
        Some(of) if v.message.is_empty() => format!("rollback to version {of}"),
        _ => v.message.clone(),
    };
    format!(
        "{}{mark}\t{}\t{}\t{message}\n",
        v.version,
        versions::utc(v.published_at),
        v.by
    )
}

/// Who publishes: the login name (`$USER`, else the account of the process's uid) `@hostname`.
fn publisher() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| account_name().unwrap_or_else(|| "unknown".into()));
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    format!("{user}@{}", host.trim())
}

/// The name of the account the process runs as.
fn account_name() -> Option<String> {
    // SAFETY: getpwuid returns null or a pointer to a static record valid until the next
    // call; the name is copied out at once.
    unsafe {
        let record = libc::getpwuid(libc::getuid());
        if record.is_null() || (*record).pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr((*record).pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// One line per live proxy, aligned.
pub fn status_table(fleet: &[Member]) -> String {
    let mut text = String::from("id\tname\tclients\tadmin\tversion\tgeneration\tstate\trefused\n");
    for m in fleet {
        let refused = m.refused.as_ref().map_or(String::new(), |r| r.error.clone());
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{refused}\n",
            m.id, m.name, m.client_addr, m.admin_addr, m.config_version, m.generation, m.state
        ));
    }
    crate::admin::align_columns(&text)
}

/// A line diff of `old` and `new` (longest common subsequence), changed lines with two lines
/// of context; empty when they are the same.
pub fn diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut lines: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    hunks(&lines, old_name, new_name)
}

/// The changed lines of a diff with two lines of context around each, `...` between.
fn hunks(lines: &[(char, &str)], old_name: &str, new_name: &str) -> String {
    let near_change = |k: usize| {
        let lo = k.saturating_sub(2);
        let hi = (k + 3).min(lines.len());
        lines[lo..hi].iter().any(|(m, _)| *m != ' ')
    };
    if lines.iter().all(|(m, _)| *m == ' ') {
        return String::new();
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let mut skipped = false;
    for (k, (mark, line)) in lines.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push_str("...\n");
                skipped = false;
            }
            out.push_str(&format!("{mark}{line}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_shows_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\nj\nk\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\nj\nk\ni\n";
        let d = diff(old, new, "v1", "v2");
        assert_eq!(d, "--- v1\n+++ v2\n...\n b\n c\n-d\n+D\n e\n f\n...\n j\n k\n+i\n");
        assert_eq!(diff(old, old, "v1", "v1"), "");
    }

    #[test]
    fn positional_words_skip_options_and_their_values() {
        let args: Vec<String> = ["--etcd", "x", "publish", "-m", "why", "f.toml", "--force"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            positional(&args, &["--etcd", "-m"], &["--force"]),
            ["publish", "f.toml"]
        );
    }
}
