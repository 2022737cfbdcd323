//! Pipelined lanes against a real MariaDB: many sessions' prepared pure reads share a few
//! backend connections, each session still gets exactly its own answer; sessions in different
//! states never share a lane; an answer with warnings, or a statement over the bound, runs
//! again on a connection of its own and keeps MySQL's diagnostics.

use crate::common;

use common::stmt::Param;
use common::{Client, Env};
use std::sync::atomic::Ordering;

const SESSIONS: usize = 16;
const ROUNDS: usize = 60;

async fn table_of(env: &Env, rows: usize) {
    let mut c = env.client_in_test().await;
    c.create_value_table("lane_t", rows, "v").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sessions_share_lanes_and_each_gets_its_own_answer() {
    let env = Env::start("pipeline_lanes = 2", "").await;
    table_of(&env, 200).await;
    let mut tasks = Vec::new();
    for s in 0..SESSIONS {
        let port = env.port();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(port, "app", "app", Some("test")).await.expect("login");
            let (id, _, _) = c.prepare("SELECT v FROM lane_t WHERE id = ?").await.expect("prepare");
            for r in 0..ROUNDS {
                let key = (s * ROUNDS + r) % 200 + 1;
                let rows = c.execute(id, &[Some(&key.to_string())]).await.expect("execute");
                assert_eq!(rows, vec![vec![Some(format!("v{key}"))]], "session {s} round {r}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("session task");
    }
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    let pipelined = m.pipelined.load(Ordering::Relaxed);
    let writes = m.pipeline_writes.load(Ordering::Relaxed);
    println!("pipelined {pipelined} statements in {writes} writes");
    assert!(pipelined > 0, "no statement went through a lane");
    assert_eq!(m.pipeline_reruns.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_binding_other_types_to_one_statement_each_get_their_own_typed_answer() {
    // A lane sends parameter types only when its server does not hold them already: with
    // one lane, these sessions' executions of one backend statement keep changing them.
    let env = Env::start("pipeline_lanes = 1", "").await;
    let mut tasks = Vec::new();
    for s in 0..8usize {
        let port = env.port();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(port, "app", "app", Some("test")).await.expect("login");
            let stmt = c.stmt_prepare("SELECT ?").await.expect("prepare");
            for r in 0..ROUNDS {
                let n = (s * ROUNDS + r) as i64;
                let (param, want) = match (s + r / 3) % 3 {
                    0 => (Param::Int(n), n.to_string()),
                    1 => (Param::Text(format!("t{n}")), format!("t{n}")),
                    _ => (Param::Double(n as f64 + 0.5), format!("{n}.5")),
                };
                let got = c.stmt_execute(&stmt, &[param]).await.expect("execute");
                assert_eq!(got.rows, vec![vec![Some(want)]], "session {s} round {r}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("session task");
    }
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    assert!(
        m.pipelined.load(Ordering::Relaxed) > 0,
        "no statement went through a lane"
    );
    assert_eq!(m.pipeline_reruns.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_in_different_states_never_share_a_lane() {
    let env = Env::start("pipeline_lanes = 1", "").await;
    let mut tasks = Vec::new();
    for s in 0..8 {
        let port = env.port();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(port, "app", "app", Some("test")).await.expect("login");
            let pipes = s % 2 == 0;
            if pipes {
                c.query("SET sql_mode = 'PIPES_AS_CONCAT'").await.expect("set");
            }
            let (id, _, _) = c.prepare("SELECT CAST(? || 'b' AS CHAR)").await.expect("prepare");
            let want = if pipes { "ab" } else { "0" };
            for _ in 0..ROUNDS {
                let rows = c.execute(id, &[Some("a")]).await.expect("execute");
                assert_eq!(rows, vec![vec![Some(want.to_string())]], "session {s}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("session task");
    }
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    assert!(m.pipelined.load(Ordering::Relaxed) > 0);
}

/// Sessions whose reads went through one lane set share its copy of their variables; a SET
/// in one of them afterwards changes that session only. (A statement keeps the parse of its
/// PREPARE, as on the server: the sessions that change `sql_mode` prepare it again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_changes_state_after_sharing_a_lane_set_changes_only_its_own() {
    let env = Env::start("pipeline_lanes = 1", "").await;
    let mut cs = Vec::new();
    for _ in 0..4 {
        let mut c = env.client_in_test().await;
        let (id, _, _) = c.prepare("SELECT CAST(1 || ? AS CHAR)").await.expect("prepare");
        cs.push((c, id));
    }
    // 1 OR 0 by default, the concatenation '10' under PIPES_AS_CONCAT (no warning either way).
    for (round, want) in [["1", "1", "1", "1"], ["10", "1", "10", "1"]].iter().enumerate() {
        if round == 1 {
            for (c, id) in cs.iter_mut().step_by(2) {
                c.query("SET sql_mode = 'PIPES_AS_CONCAT'").await.expect("set");
                let rows = c.execute(*id, &[Some("0")]).await.expect("execute");
                assert_eq!(rows, vec![vec![Some("1".to_string())]], "parsed at its PREPARE");
                *id = c.prepare("SELECT CAST(1 || ? AS CHAR)").await.expect("prepare").0;
            }
        }
        for _ in 0..10 {
            for (i, (c, id)) in cs.iter_mut().enumerate() {
                let rows = c.execute(*id, &[Some("0")]).await.expect("execute");
                assert_eq!(rows, vec![vec![Some(want[i].to_string())]], "round {round} session {i}");
            }
        }
    }
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    assert!(m.pipelined.load(Ordering::Relaxed) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_with_warnings_runs_again_alone_and_its_warnings_stay_readable() {
    let env = Env::start("pipeline_lanes = 1", "").await;
    let mut c = env.client_in_test().await;
    let (id, _, _) = c
        .prepare("SELECT CAST(CAST(? AS SIGNED) AS CHAR)")
        .await
        .expect("prepare");
    let rows = c.execute(id, &[Some("7")]).await.expect("clean execute");
    assert_eq!(rows, vec![vec![Some("7".to_string())]]);
    let rows = c.execute(id, &[Some("12abc")]).await.expect("execute with a warning");
    assert_eq!(rows, vec![vec![Some("12".to_string())]]);
    let warnings = c.query("SHOW WARNINGS").await.expect("show warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0][1].as_deref(), Some("1292"), "{warnings:?}");
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    assert_eq!(m.pipelined.load(Ordering::Relaxed), 1);
    assert_eq!(m.pipeline_reruns.load(Ordering::Relaxed), 1);
    // The statement is not offered to a lane again in this session.
    c.execute(id, &[Some("8")]).await.expect("execute again");
    assert_eq!(m.pipelined.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_over_the_bound_is_interrupted_in_the_lane_and_answered_alone() {
    let env = Env::start("pipeline_lanes = 1\npipeline_statement_bound_ms = 1", "").await;
    table_of(&env, 100).await;
    let mut c = env.client_in_test().await;
    let sql = "SELECT CAST(COUNT(*) AS CHAR) FROM lane_t a, lane_t b, lane_t c WHERE a.id + b.id + c.id > ?";
    let (id, _, _) = c.prepare(sql).await.expect("prepare");
    let rows = c.execute(id, &[Some("0")]).await.expect("execute");
    assert_eq!(rows, vec![vec![Some("1000000".to_string())]]);
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    assert_eq!(m.pipeline_reruns.load(Ordering::Relaxed), 1);
    assert_eq!(m.pipelined.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_reads_go_through_lanes_too_and_keep_their_warnings() {
    let env = Env::start("pipeline_lanes = 2", "").await;
    table_of(&env, 100).await;
    let mut tasks = Vec::new();
    for s in 0..8 {
        let port = env.port();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(port, "app", "app", Some("test")).await.expect("login");
            for r in 0..ROUNDS {
                let key = (s * ROUNDS + r) % 100 + 1;
                let v = c.value(&format!("SELECT v FROM lane_t WHERE id = {key}")).await;
                assert_eq!(v, Some(format!("v{key}")), "session {s} round {r}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("session task");
    }
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    assert!(m.pipelined.load(Ordering::Relaxed) > 0);
    let mut c = env.client_in_test().await;
    assert_eq!(c.value("SELECT CAST('12abc' AS SIGNED)").await.as_deref(), Some("12"));
    let warnings = c.query("SHOW WARNINGS").await.expect("show warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0][1].as_deref(), Some("1292"), "{warnings:?}");
    assert_eq!(m.pipeline_reruns.load(Ordering::Relaxed), 1);
}

/// At low load a lane writes a statement that comes while it waits for an answer at once, not
/// a round trip later: a second session's read reaches the server while the first session's
/// slow read still runs there (before, it waited in the lane for the slow read's answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_that_comes_while_the_lane_waits_is_written_at_once() {
    let env = Env::start("pipeline_lanes = 1\npipeline_statement_bound_ms = 600000", "").await;
    table_of(&env, 200).await;
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    let mut second = env.client_in_test().await;
    let (quick, _, _) = second
        .prepare("SELECT v FROM lane_t WHERE id = ?")
        .await
        .expect("prepare");
    // Once through the lane first, so the lane holds the statement prepared.
    assert_eq!(
        second.execute(quick, &[Some("6")]).await.expect("warm"),
        vec![vec![Some("v6".into())]]
    );
    let slow = "SELECT CAST(COUNT(*) AS CHAR) FROM lane_t a, lane_t b, lane_t c WHERE a.id + b.id + c.id > ?";
    let port = env.port();
    let first = tokio::spawn(async move {
        let mut c = Client::connect(port, "app", "app", Some("test")).await.expect("login");
        let (id, _, _) = c.prepare(slow).await.expect("prepare");
        c.execute(id, &[Some("0")]).await.expect("execute")
    });
    env.wait_until_backend_runs("SELECT CAST(COUNT(*)").await;
    let writes = m.pipeline_writes.load(Ordering::Relaxed);
    let answer = tokio::spawn(async move { second.execute(quick, &[Some("7")]).await.expect("execute") });
    // Progress, not time: the lane's next write, or else the slow read's end.
    while m.pipeline_writes.load(Ordering::Relaxed) == writes {
        assert!(
            !first.is_finished(),
            "the read was not written before the slow read's answer"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let running = "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'SELECT CAST(COUNT(*)%'";
    assert_ne!(
        env.backend_sql(running).trim(),
        "0",
        "the slow read had ended when the read was written"
    );
    assert_eq!(answer.await.expect("task"), vec![vec![Some("v7".into())]]);
    assert_eq!(first.await.expect("task"), vec![vec![Some("8000000".into())]]);
    assert_eq!(m.pipeline_reruns.load(Ordering::Relaxed), 0);
}

/// A stored function may write, and a lane's statement may run twice, so a call to one never
/// goes through a lane, however it is named: in backquotes or qualified by its schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_function_calls_never_go_through_a_lane() {
    let env = Env::start("pipeline_lanes = 2", "").await;
    table_of(&env, 10).await;
    let mut c = env.client_in_test().await;
    c.query("CREATE FUNCTION plus_one(x INT) RETURNS INT DETERMINISTIC RETURN x + 1")
        .await
        .expect("create function");
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    let pipelined = || m.pipelined.load(Ordering::Relaxed);
    let before = pipelined();
    assert_eq!(
        c.value("SELECT v FROM lane_t WHERE id = 1").await.as_deref(),
        Some("v1")
    );
    assert_eq!(pipelined(), before + 1, "a pure read goes through a lane");
    for sql in [
        "SELECT `plus_one`(1)",
        "SELECT test.plus_one(1)",
        "SELECT `test`.`plus_one`(1)",
    ] {
        assert_eq!(c.value(sql).await.as_deref(), Some("2"), "{sql}");
    }
    assert_eq!(pipelined(), before + 1, "no stored function call went through a lane");
}

/// A session that set a statement time limit of its own keeps it: its reads never run in a
/// lane (whose connection carries the lane's bound), while other sessions' still do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_time_limit_keeps_its_reads_out_of_lanes() {
    let env = Env::start("pipeline_lanes = 2", "").await;
    table_of(&env, 10).await;
    let mut limited = env.client_in_test().await;
    let mut other = env.client_in_test().await;
    let m = &env.proxy.as_ref().expect("running").ctx.metrics;
    // Offered to a lane: answered there, or handed back to run alone (a read slower than the
    // lane's bound, as on a loaded machine): either way it went to a lane.
    let pipelined = || m.pipelined.load(Ordering::Relaxed) + m.pipeline_reruns.load(Ordering::Relaxed);
    let read = "SELECT v FROM lane_t WHERE id = 2";
    let before = pipelined();
    assert_eq!(limited.value(read).await.as_deref(), Some("v2"));
    assert_eq!(pipelined(), before + 1, "a pure read goes through a lane");
    limited
        .query("SET SESSION max_statement_time = 5")
        .await
        .expect("set the limit");
    for _ in 0..3 {
        assert_eq!(limited.value(read).await.as_deref(), Some("v2"));
    }
    assert_eq!(
        pipelined(),
        before + 1,
        "the limited session's reads ran on its own connection"
    );
    assert_eq!(
        limited.value("SELECT @@max_statement_time").await.as_deref(),
        Some("5.000000")
    );
    assert_eq!(other.value(read).await.as_deref(), Some("v2"));
    assert_eq!(
        pipelined(),
        before + 2,
        "another session's read still goes through a lane"
    );
}
