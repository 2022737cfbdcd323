//! Integration tests for GTID replication: a real primary with two replicas
//! (needs mariadb-server and mariadb-client).

use std::time::{Duration, Instant};

mod common;

use common::tcp_query;
use tessera_sandbox::{Sandbox, SandboxError, SandboxOptions, Server};

/// Generous: only reached when something is broken (the tests never assert durations).
const CATCH_UP: Duration = Duration::from_secs(60);

fn value(server: &Server, sql: &str) -> String {
    server
        .sql(sql)
        .unwrap_or_else(|e| panic!("{sql} on {}: {e}", server.name()))
        .trim()
        .to_string()
}

fn count(server: &Server) -> String {
    value(server, "select count(*) from test.t")
}

/// Waits until the replica's IO thread has received `pos` (it may not have applied it).
fn wait_received(replica: &Server, pos: &str) {
    let deadline = Instant::now() + CATCH_UP;
    loop {
        let status = replica.replica_status().expect("replica status");
        if status.gtid_io_pos == pos {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never received {pos}: {status:?}",
            replica.name()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn primary_and_two_replicas() {
    let mut sandbox = Sandbox::start(SandboxOptions {
        servers: 3,
        replication: true,
        ..Default::default()
    })
    .expect("start replicated sandbox");
    setup_reaches_the_replicas(&sandbox);
    rows_reach_every_replica(&sandbox);
    stopped_sql_thread_falls_behind_then_catches_up(&sandbox);
    killed_replica_resumes_after_restart(&mut sandbox);
    replicas_reconnect_to_a_restarted_primary(&mut sandbox);
}

fn setup_reaches_the_replicas(sandbox: &Sandbox) {
    let primary = sandbox.primary();
    assert_eq!(primary.name(), "s0");
    assert!(!primary.is_replica());
    let names: Vec<&str> = sandbox.replicas().iter().map(Server::name).collect();
    assert_eq!(names, ["s1", "s2"]);
    assert_eq!(
        value(primary, "select @@read_only, @@log_bin, @@binlog_format"),
        "0\t1\tROW"
    );
    let err = primary.replica_status().expect_err("the primary is no replica");
    assert!(
        matches!(err, SandboxError::Replication { ref server, .. } if server == "s0"),
        "{err}"
    );
    let primary_state = value(primary, "select @@gtid_binlog_state");
    assert!(!primary_state.is_empty());
    for replica in sandbox.replicas() {
        assert!(replica.is_replica());
        assert_eq!(
            value(replica, "select @@read_only, @@log_bin, @@log_slave_updates"),
            "1\t1\t1"
        );
        let status = replica.replica_status().expect("replica status");
        assert!(status.io_running && status.sql_running, "{status:?}");
        assert_eq!(status.primary_port, primary.port());
        assert_eq!(status.last_error, None);
        // Nothing was written locally: the replica's binlog holds only the primary's GTIDs.
        assert_eq!(value(replica, "select @@gtid_binlog_state"), primary_state);
        let dbs = value(replica, "show databases");
        assert!(
            dbs.lines().any(|l| l == "test") && dbs.lines().any(|l| l == "sbtest"),
            "{dbs}"
        );
        let me = tcp_query(replica, "tessera", "tessera", "select current_user()").expect("tessera on a replica");
        assert!(me.starts_with("tessera@"), "{me}");
    }
}

fn rows_reach_every_replica(sandbox: &Sandbox) {
    sandbox
        .primary()
        .sql("create table test.t (id int primary key, v varchar(20)) engine=innodb; insert into test.t values (1, 'a'), (2, 'b');")
        .expect("write on the primary");
    sandbox.wait_for_replicas(CATCH_UP).expect("replicas catch up");
    for replica in sandbox.replicas() {
        assert_eq!(value(replica, "select group_concat(v order by id) from test.t"), "a,b");
        let status = replica.replica_status().expect("status");
        assert_eq!(status.gtid_slave_pos, sandbox.primary().gtid_binlog_pos().expect("pos"));
        assert!(status.seconds_behind.is_some(), "{status:?}");
    }
}

fn stopped_sql_thread_falls_behind_then_catches_up(sandbox: &Sandbox) {
    let (lagging, other) = (&sandbox.replicas()[0], &sandbox.replicas()[1]);
    lagging.stop_replica_sql_thread().expect("stop sql thread");
    let status = lagging.replica_status().expect("status");
    assert!(!status.sql_running && status.io_running, "{status:?}");
    assert_eq!(status.seconds_behind, None);

    sandbox
        .primary()
        .sql("insert into test.t values (3, 'c')")
        .expect("insert");
    let pos = sandbox.primary().gtid_binlog_pos().expect("pos");
    other
        .wait_for_gtid(&pos, CATCH_UP)
        .expect("the other replica applies it");
    assert_eq!(count(other), "3");
    wait_received(lagging, &pos);
    assert_eq!(count(lagging), "2", "received but not applied");
    assert_ne!(lagging.replica_status().expect("status").gtid_slave_pos, pos);
    let err = sandbox
        .wait_for_replicas(Duration::from_secs(1))
        .expect_err("a stopped replica cannot catch up");
    match &err {
        SandboxError::ReplicaTimeout {
            server,
            target,
            last_errors,
            ..
        } => {
            assert_eq!(server, "s1");
            assert_eq!(target, &pos);
            assert!(last_errors.contains("Last_SQL_Error") && last_errors.contains("Last_IO_Error"));
        }
        other => panic!("unexpected error {other}"),
    }

    lagging.start_replica_sql_thread().expect("start sql thread");
    sandbox.wait_for_replicas(CATCH_UP).expect("caught up again");
    assert_eq!(count(lagging), "3");
    assert!(lagging.replica_status().expect("status").sql_running);
}

fn killed_replica_resumes_after_restart(sandbox: &mut Sandbox) {
    let victim = sandbox.server_mut(2);
    victim.kill().expect("kill -9 the replica");
    assert!(!victim.is_running());
    sandbox
        .primary()
        .sql("insert into test.t values (4, 'd'), (5, 'e'); update test.t set v = 'A' where id = 1;")
        .expect("write while the replica is down");

    let victim = sandbox.server_mut(2);
    victim.start().expect("restart the replica");
    assert_eq!(
        value(victim, "select @@read_only, @@log_bin"),
        "1\t1",
        "restart keeps the replica args"
    );
    sandbox
        .primary()
        .sql("insert into test.t values (6, 'f')")
        .expect("write after the restart");
    sandbox
        .wait_for_replicas(CATCH_UP)
        .expect("restarted replica catches up");
    for replica in sandbox.replicas() {
        assert_eq!(
            value(replica, "select group_concat(v order by id) from test.t"),
            "A,b,c,d,e,f"
        );
        let status = replica.replica_status().expect("status");
        assert!(
            status.io_running && status.sql_running,
            "{}: {status:?}",
            replica.name()
        );
        assert_eq!(status.last_error, None);
    }
}

fn replicas_reconnect_to_a_restarted_primary(sandbox: &mut Sandbox) {
    let primary = sandbox.server_mut(0);
    primary.kill().expect("kill -9 the primary");
    primary.start().expect("restart the primary");
    sandbox
        .primary()
        .sql("insert into test.t values (7, 'g')")
        .expect("write after the restart");
    sandbox
        .wait_for_replicas(CATCH_UP)
        .expect("replicas reconnect and catch up");
    for replica in sandbox.replicas() {
        assert_eq!(count(replica), "7");
        let status = replica.replica_status().expect("status");
        assert!(
            status.io_running && status.sql_running,
            "{}: {status:?}",
            replica.name()
        );
    }
}

#[test]
fn replication_needs_two_servers() {
    let err = Sandbox::start(SandboxOptions {
        servers: 1,
        replication: true,
        ..Default::default()
    })
    .expect_err("one server cannot replicate");
    assert!(matches!(err, SandboxError::InvalidOptions(_)), "{err}");
}

#[test]
fn without_replication_there_are_no_replicas() {
    let sandbox = Sandbox::start(SandboxOptions {
        servers: 2,
        ..Default::default()
    })
    .expect("start");
    assert!(sandbox.replicas().is_empty());
    assert_eq!(sandbox.primary().name(), "s0");
    sandbox.wait_for_replicas(Duration::ZERO).expect("nothing to wait for");
    assert_eq!(value(sandbox.server(1), "select @@read_only, @@log_bin"), "0\t0");
}
