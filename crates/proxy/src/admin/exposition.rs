//! What `/metrics` and `/status` answer: the process's counters and the current generation's
//! pools and servers, in the Prometheus text exposition format and as the status page.

use crate::context::Context;
use crate::metrics::{Metrics, PIN_REASONS};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

fn line(out: &mut String, name: &str, help: &str, kind: &str, value: u64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

/// Renders every metric in the Prometheus text exposition format.
pub fn render(ctx: &Context) -> String {
    let m = &ctx.metrics;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut out = String::new();
    line(
        &mut out,
        "tessera_client_connections",
        "Client connections open now.",
        "gauge",
        get(&m.client_connections),
    );
    line(
        &mut out,
        "tessera_client_connections_total",
        "Client connections accepted.",
        "counter",
        get(&m.client_connections_total),
    );
    line(
        &mut out,
        "tessera_health_checks_total",
        "Requests of /health answered (a load balancer's checks).",
        "counter",
        ctx.drain.checks(),
    );
    line(
        &mut out,
        "tessera_draining",
        "1 while the process drains before it exits (/health answers 503).",
        "gauge",
        u64::from(ctx.drain.is_draining()),
    );
    line(
        &mut out,
        "tessera_client_auth_failures_total",
        "Failed client logins.",
        "counter",
        get(&m.client_auth_failures),
    );
    line(
        &mut out,
        "tessera_queries_total",
        "COM_QUERY statements run.",
        "counter",
        get(&m.queries),
    );
    line(
        &mut out,
        "tessera_prepared_executes_total",
        "COM_STMT_EXECUTE run.",
        "counter",
        get(&m.prepared_executes),
    );
    line(
        &mut out,
        "tessera_query_errors_total",
        "Statements answered with an error.",
        "counter",
        get(&m.query_errors),
    );
    line(
        &mut out,
        "tessera_state_syncs_total",
        "Checkouts that replayed session state.",
        "counter",
        get(&m.state_syncs),
    );
    line(
        &mut out,
        "tessera_pipelined_total",
        "Statements answered through a pipelined lane.",
        "counter",
        get(&m.pipelined),
    );
    line(
        &mut out,
        "tessera_pipeline_writes_total",
        "Writes of pipelined lanes (statements per write = pipelined / writes).",
        "counter",
        get(&m.pipeline_writes),
    );
    line(
        &mut out,
        "tessera_pipeline_reruns_total",
        "Pipelined statements run again on a connection of their own (warnings, error, over the bound).",
        "counter",
        get(&m.pipeline_reruns),
    );
    line(
        &mut out,
        "tessera_queued_transaction_ends_total",
        "COMMIT/ROLLBACK of transactions that ran only pure reads, answered at once and sent with the connection's next command.",
        "counter",
        get(&m.queued_transaction_ends),
    );
    line(
        &mut out,
        "tessera_transaction_ends_folded_total",
        "Queued COMMIT/ROLLBACK of pure reads never sent: the next BEGIN on the connection ended the transaction itself.",
        "counter",
        get(&m.transaction_ends_folded),
    );
    line(
        &mut out,
        "tessera_last_insert_id_round_trips_total",
        "LAST_INSERT_ID() reads with a round trip of their own (a connection going back after statements that may have changed it); reads behind an insert or a transaction's end travel in its write.",
        "counter",
        get(&m.last_insert_id_round_trips),
    );
    line(
        &mut out,
        "tessera_last_insert_id_answered_total",
        "Plain SELECT LAST_INSERT_ID() statements answered from the session's known value, with no backend round trip.",
        "counter",
        get(&m.last_insert_id_answered),
    );
    line(
        &mut out,
        "tessera_config_generation",
        "The configuration generation new statements run on (1 at start, one more per reload).",
        "gauge",
        ctx.generation_number(),
    );
    line(
        &mut out,
        "tessera_config_reloads_total",
        "Configuration reloads that became a new generation.",
        "counter",
        get(&m.reloads),
    );
    line(
        &mut out,
        "tessera_config_reloads_refused_total",
        "Configuration reloads refused whole (invalid, or a setting only a restart applies).",
        "counter",
        get(&m.reloads_refused),
    );
    line(
        &mut out,
        "tessera_backend_lost_total",
        "Backend connections lost during a statement.",
        "counter",
        get(&m.backend_lost),
    );
    let _ = writeln!(out, "# HELP tessera_pins_total Sessions pinned to a backend connection, by reason.\n# TYPE tessera_pins_total counter");
    for (i, r) in PIN_REASONS.iter().enumerate() {
        let _ = writeln!(out, "tessera_pins_total{{reason=\"{r}\"}} {}", get(&m.pins[i]));
    }
    if let Some(ring) = &ctx.ring {
        line(
            &mut out,
            "tessera_io_uring_sends_total",
            "Socket sends queued on the io_uring (server.io).",
            "counter",
            ring.sends(),
        );
        line(
            &mut out,
            "tessera_io_uring_submissions_total",
            "System calls that submitted them (sends per call = sends / submissions).",
            "counter",
            ring.submissions(),
        );
    }
    render_transactions(m, &mut out);
    render_pools(ctx, &mut out);
    out
}

/// Commits on sharded schemas by protocol, and the recovery of in-doubt XA branches.
fn render_transactions(m: &Metrics, out: &mut String) {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "# HELP tessera_commits_total Transactions on sharded schemas committed, by protocol (one_phase: one written shard; two_phase: XA).\n# TYPE tessera_commits_total counter\n\
         tessera_commits_total{{protocol=\"one_phase\"}} {}\ntessera_commits_total{{protocol=\"two_phase\"}} {}",
        get(&m.commits_one_phase),
        get(&m.commits_two_phase)
    );
    let _ = writeln!(
        out,
        "# HELP tessera_xa_recovered_total In-doubt XA branches resolved by recovery, by outcome.\n# TYPE tessera_xa_recovered_total counter\n\
         tessera_xa_recovered_total{{outcome=\"commit\"}} {}\ntessera_xa_recovered_total{{outcome=\"rollback\"}} {}",
        get(&m.xa_recovered_commit),
        get(&m.xa_recovered_rollback)
    );
    line(
        out,
        "tessera_xa_rolled_back_total",
        "Two-phase transactions rolled back before their decision.",
        "counter",
        get(&m.xa_rolled_back),
    );
    line(
        out,
        "tessera_xa_left_to_recovery_total",
        "Branches a COMMIT decision left to recovery (server unreachable).",
        "counter",
        get(&m.xa_left_to_recovery),
    );
    line(
        out,
        "tessera_xa_in_doubt",
        "XA branches in doubt after the last recovery scan.",
        "gauge",
        get(&m.xa_in_doubt),
    );
    line(
        out,
        "tessera_xa_recovery_scans_total",
        "Completed recovery scans.",
        "counter",
        get(&m.xa_recovery_scans),
    );
}

fn render_pools(ctx: &Context, out: &mut String) {
    let series: [(&str, &str); 6] = [
        (
            "tessera_pool_open",
            "Backend connections open (idle + in use + pinned).",
        ),
        (
            "tessera_pool_in_use",
            "Backend connections lent to sessions (pinned excluded).",
        ),
        ("tessera_pool_idle", "Idle backend connections."),
        ("tessera_pool_pinned", "Backend connections pinned to one session."),
        ("tessera_pool_checkout_timeouts_total", "Checkouts that timed out."),
        (
            "tessera_pool_connect_failures_total",
            "Failed backend connection attempts.",
        ),
    ];
    for (name, help) in series {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for g in &ctx.generation().groups {
            for server in &g.servers {
                let p = &server.pool;
                let v = match name {
                    "tessera_pool_open" => p.stats.open.load(Ordering::Relaxed) as u64,
                    "tessera_pool_in_use" => p.in_use() as u64,
                    "tessera_pool_idle" => p.idle_count() as u64,
                    "tessera_pool_pinned" => p.stats.pinned.load(Ordering::Relaxed) as u64,
                    "tessera_pool_checkout_timeouts_total" => p.stats.checkout_timeouts.load(Ordering::Relaxed),
                    _ => p.stats.connect_failures.load(Ordering::Relaxed),
                };
                let _ = writeln!(out, "{name}{{group=\"{}\",server=\"{}\"}} {v}", g.name, server.address);
            }
        }
    }
    render_servers(ctx, out);
}

/// Routing counters and health per server.
fn render_servers(ctx: &Context, out: &mut String) {
    type Get = fn(&crate::cluster::Group, usize) -> i64;
    let series: [(&str, &str, &str, Get); 9] = [
        (
            "tessera_server_reads_total",
            "counter",
            "Statements routed to this server as reads.",
            |g, i| g.servers[i].reads.load(Ordering::Relaxed) as i64,
        ),
        (
            "tessera_server_writes_total",
            "counter",
            "Statements routed to this server as its group's primary.",
            |g, i| g.servers[i].writes.load(Ordering::Relaxed) as i64,
        ),
        (
            "tessera_server_read_retries_total",
            "counter",
            "Reads that failed here before any row was sent and were retried elsewhere.",
            |g, i| g.servers[i].read_retries.load(Ordering::Relaxed) as i64,
        ),
        (
            "tessera_server_gtid_waits_applied_total",
            "counter",
            "Session reads that waited here for their last write and got it within read_your_writes_wait_ms.",
            |g, i| g.servers[i].gtid_waits_applied.load(Ordering::Relaxed) as i64,
        ),
        (
            "tessera_server_gtid_waits_timed_out_total",
            "counter",
            "Session reads that waited here for their last write in vain and went to the primary.",
            |g, i| g.servers[i].gtid_waits_timed_out.load(Ordering::Relaxed) as i64,
        ),
        (
            "tessera_server_up",
            "gauge",
            "1 when the last check reached the server.",
            |g, i| i64::from(g.servers[i].health.reachable()),
        ),
        (
            "tessera_server_serving_reads",
            "gauge",
            "1 when a replica qualifies for reads (replicating, within max lag).",
            |g, i| i64::from(g.servers[i].health.serves_reads(g.max_lag_s)),
        ),
        (
            "tessera_server_lag_seconds",
            "gauge",
            "Replication lag as SHOW SLAVE STATUS reports it; -1 when unknown.",
            |g, i| g.servers[i].health.lag_s().map_or(-1, |l| l as i64),
        ),
        (
            "tessera_server_is_primary",
            "gauge",
            "1 for the server currently taking writes.",
            |g, i| i64::from(g.primary_index() == i),
        ),
    ];
    for (name, kind, help, get) in series {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for g in &ctx.generation().groups {
            for (i, server) in g.servers.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{name}{{group=\"{}\",server=\"{}\"}} {}",
                    g.name,
                    server.address,
                    get(g, i)
                );
            }
        }
    }
}

/// The `tessera status` table: per server its role, state, routed statements, lag and GTID.
pub fn render_status(ctx: &Context) -> String {
    let gen = ctx.generation();
    let mut out = String::from("group\tserver\trole\tstate\treads\twrites\tretried\tlag_s\tweight\tgtid\tgeneration\n");
    for g in &gen.groups {
        for (i, s) in g.servers.iter().enumerate() {
            let role = if i == g.primary_index() { "primary" } else { "replica" };
            let lag = s.health.lag_s().map_or("-".to_string(), |l| l.to_string());
            let _ = writeln!(
                out,
                "{}\t{}\t{role}\t{}\t{}\t{}\t{}\t{lag}\t{}\t{}\t{}",
                g.name,
                s.address,
                crate::monitor::describe(g, i),
                s.reads.load(Ordering::Relaxed),
                s.writes.load(Ordering::Relaxed),
                s.read_retries.load(Ordering::Relaxed),
                s.read_weight(),
                s.health.position(),
                gen.number,
            );
        }
    }
    out
}
