//! A scatter read against scripted fake servers: every way a shard can fail (an error in
//! the header or between rows, a stall past the deadline, a malformed row, a lost send), a
//! client that leaves, and which connections may be reused afterwards.

use super::ScatterRun;
use crate::backend::fake_shard::{packets, Answer, FakeConn, FakeServer, Timeline};
use crate::backend::shard_conn::ShardConn;
use crate::error::{ProxyError, ServerError};
use crate::exec::merge::fake::VecSink;
use crate::exec::merge::{MergeError, MergeSpec, RowSink, SortKey};
use crate::exec::row::Value;
use std::future::{pending, ready};
use std::time::Duration;
use tessera_protocol::resultset::ColumnDefinition;

const SQL: &str = "SELECT id, name FROM t ORDER BY id";
const DEADLINE: Duration = Duration::from_secs(30);

fn columns() -> [ColumnDefinition; 2] {
    [ColumnDefinition::bigint("id"), ColumnDefinition::text("name")]
}

/// A shard server answering the scatter's statement with `answer`.
fn shard(name: &str, answer: Vec<Option<bytes::Bytes>>) -> FakeServer {
    FakeServer::new(name, &Timeline::default()).rule("SELECT", Answer::Packets(answer))
}

/// A shard's rows `(id, name)`, ordered by id, ending with `warnings`.
fn rows(ids: &[i64], warnings: u16) -> Vec<Option<bytes::Bytes>> {
    let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
    let rows: Vec<Vec<Option<String>>> = ids
        .iter()
        .zip(&names)
        .map(|(i, n)| vec![Some(i.to_string()), Some(n.clone())])
        .collect();
    let refs: Vec<Vec<Option<&str>>> = rows.iter().map(|r| r.iter().map(Option::as_deref).collect()).collect();
    let slices: Vec<&[Option<&str>]> = refs.iter().map(Vec::as_slice).collect();
    packets::result_set(&columns(), &slices, warnings)
}

/// A run with the statement sent to each server, in shard order.
async fn sent(servers: &[FakeServer]) -> ScatterRun<FakeConn> {
    let mut run = ScatterRun::default();
    for (i, server) in servers.iter().enumerate() {
        run.send(i, server.connect(), SQL).await.expect("sent");
    }
    run
}

fn by_id() -> MergeSpec {
    MergeSpec {
        order: vec![SortKey::asc(0)],
        ..MergeSpec::new(2)
    }
}

fn ids(sink: &VecSink) -> Vec<i64> {
    sink.rows
        .iter()
        .map(|r| match r[0] {
            Value::Int(i) => i,
            ref v => panic!("an id: {v:?}"),
        })
        .collect()
}

fn broken(run: &ScatterRun<FakeConn>) -> Vec<bool> {
    run.states.iter().map(|st| st.conn.broken()).collect()
}

#[tokio::test]
async fn every_shard_rows_merge_in_order_and_every_connection_is_reusable() {
    let servers = [shard("s0", rows(&[1, 4, 5], 1)), shard("s1", rows(&[2, 3, 6], 2))];
    let mut run = sent(&servers).await;
    let header = run.headers(DEADLINE, pending()).await.expect("headers");
    assert_eq!(header.len(), 2, "the first shard's column definitions, as sent");
    let mut sink = VecSink::default();
    let (merged, warnings) = run.merge(&by_id(), &mut sink).await;
    assert_eq!(merged.expect("merged").rows_counted, 6);
    assert_eq!(ids(&sink), [1, 2, 3, 4, 5, 6]);
    assert_eq!(sink.rows[1][1], Value::Bytes("n2".into()));
    assert_eq!(warnings, 3, "the shards' warnings, summed");
    assert_eq!(broken(&run), [false, false]);
    assert!(run.states.iter().all(|st| st.done), "each result read to its end");
    for s in &servers {
        assert_eq!(s.log(), [SQL]);
    }
}

#[tokio::test]
async fn a_limit_that_is_met_early_drains_the_rest_and_keeps_the_connections() {
    let servers = [shard("s0", rows(&[1, 3, 5, 7], 0)), shard("s1", rows(&[2, 4, 6, 8], 0))];
    let mut run = sent(&servers).await;
    run.headers(DEADLINE, pending()).await.expect("headers");
    let spec = MergeSpec {
        limit: Some(2),
        ..by_id()
    };
    let mut sink = VecSink::default();
    let (merged, _) = run.merge(&spec, &mut sink).await;
    merged.expect("merged");
    assert_eq!(ids(&sink), [1, 2]);
    assert_eq!(broken(&run), [false, false], "drained, so reusable");
    assert!(run.states.iter().all(|st| st.done));
}

#[tokio::test]
async fn a_shard_error_in_the_header_fails_the_read_and_breaks_every_connection() {
    let servers = [
        shard("s0", rows(&[1], 0)),
        shard("s1", vec![packets::err(1146, "Table 'd1.t' doesn't exist")]),
    ];
    let mut run = sent(&servers).await;
    match run.headers(DEADLINE, pending()).await {
        Err(ProxyError::Backend(e)) => assert_eq!(e.code, 1146),
        other => panic!("the shard's error: {other:?}"),
    }
    assert_eq!(broken(&run), [true, true], "shard 0's rows were never read");
}

#[tokio::test]
async fn a_shard_that_stalls_past_the_deadline_fails_the_read_and_breaks_every_connection() {
    let mut stalled = rows(&[2], 0);
    stalled.insert(1, None);
    let servers = [shard("s0", rows(&[1], 0)), shard("s1", stalled)];
    let mut run = sent(&servers).await;
    match run.headers(Duration::from_millis(20), pending()).await {
        Err(ProxyError::Server(ServerError::ScatterDeadline(20))) => {}
        other => panic!("the deadline: {other:?}"),
    }
    assert_eq!(broken(&run), [true, true]);
}

#[tokio::test]
async fn a_malformed_header_breaks_every_connection() {
    let mut bad = rows(&[2], 0);
    bad[1] = Some(bytes::Bytes::from_static(&[0xfc]));
    let servers = [shard("s0", rows(&[1], 0)), shard("s1", bad)];
    let mut run = sent(&servers).await;
    match run.headers(DEADLINE, pending()).await {
        Err(ProxyError::LostBackend { .. }) => {}
        other => panic!("a lost backend: {other:?}"),
    }
    assert_eq!(broken(&run), [true, true]);
}

#[tokio::test]
async fn a_malformed_row_fails_the_merge_and_breaks_that_shard_only() {
    let mut bad = rows(&[2, 4], 0);
    // A row whose first value claims 5 bytes and carries 1.
    bad[3] = Some(bytes::Bytes::from_static(&[0x05, b'2']));
    let servers = [shard("s0", rows(&[1, 3], 0)), shard("s1", bad)];
    let mut run = sent(&servers).await;
    run.headers(DEADLINE, pending()).await.expect("headers");
    let mut sink = VecSink::default();
    let (merged, _) = run.merge(&by_id(), &mut sink).await;
    assert!(matches!(merged, Err(MergeError::Source(_))), "{merged:?}");
    assert_eq!(broken(&run), [false, true], "the healthy shard was drained");
    assert!(run.states[0].done);
}

#[tokio::test]
async fn a_shard_error_between_rows_fails_the_merge_and_its_end_keeps_the_connections() {
    let mut failing = rows(&[2], 0);
    let end = failing.len() - 1;
    failing[end] = packets::err(1205, "Lock wait timeout exceeded");
    let servers = [shard("s0", rows(&[1, 3], 0)), shard("s1", failing)];
    let mut run = sent(&servers).await;
    run.headers(DEADLINE, pending()).await.expect("headers");
    let mut sink = VecSink::default();
    let (merged, _) = run.merge(&by_id(), &mut sink).await;
    match merged {
        Err(MergeError::Backend(e)) => assert_eq!(e.code, 1205),
        other => panic!("the shard's error: {other:?}"),
    }
    assert_eq!(broken(&run), [false, false], "an ERR ends a result set cleanly");
    assert!(run.states.iter().all(|st| st.done));
}

/// A sink whose client has gone.
struct Gone(VecSink);

impl RowSink for Gone {
    async fn send_row(&mut self, row: &[Value]) -> Result<(), MergeError> {
        self.0.send_row(row).await
    }

    async fn client_left(&mut self) {}
}

#[tokio::test]
async fn a_client_that_leaves_while_a_shard_stalls_mid_rows_breaks_every_connection_undrained() {
    let mut stalled = rows(&[2, 4], 0);
    stalled.insert(4, None);
    let servers = [shard("s0", rows(&[1, 3], 0)), shard("s1", stalled)];
    let mut run = sent(&servers).await;
    run.headers(DEADLINE, pending()).await.expect("headers");
    let mut sink = Gone(VecSink::default());
    let (merged, _) = run.merge(&by_id(), &mut sink).await;
    assert!(matches!(merged, Err(MergeError::ClientLeft)), "{merged:?}");
    assert_eq!(broken(&run), [true, true]);
    assert!(!run.states[1].done, "the stalled shard is not waited for");
}

#[tokio::test]
async fn a_client_that_leaves_during_the_header_wait_breaks_every_connection() {
    let servers = [shard("s0", rows(&[1], 0)), shard("s1", vec![None])];
    let mut run = sent(&servers).await;
    match run.headers(DEADLINE, ready(())).await {
        Err(ProxyError::Client(_)) => {}
        other => panic!("the client's end: {other:?}"),
    }
    assert_eq!(broken(&run), [true, true]);
}

#[tokio::test]
async fn a_send_that_fails_breaks_the_connections_already_sent() {
    let servers = [shard("s0", rows(&[1], 0)), shard("s1", rows(&[2], 0))];
    let mut run = ScatterRun::default();
    run.send(0, servers[0].connect(), SQL).await.expect("sent");
    let mut dead = servers[1].connect();
    dead.mark_broken();
    assert!(run.send(1, dead, SQL).await.is_err());
    assert_eq!(broken(&run), [true, true], "shard 0's answer will never be read");
    assert_eq!(servers[1].log(), Vec::<String>::new());
}
