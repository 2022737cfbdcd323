//! Integration tests: really start MariaDB servers (needs mariadb-server and mariadb-client).

use std::path::Path;

mod common;

use common::tcp_query;
use tessera_sandbox::{Sandbox, SandboxError, SandboxOptions, Server};

fn process_exists(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn assert_answers_on_its_port(server: &Server) {
    let port = server.sql("select @@port").expect("select @@port");
    assert_eq!(port.trim(), server.port().to_string(), "server {}", server.name());
}

#[test]
fn two_servers_lifecycle() {
    let mut sandbox = Sandbox::start(SandboxOptions {
        servers: 2,
        ..Default::default()
    })
    .expect("start sandbox");
    let base = sandbox.base_dir().to_path_buf();
    assert!(base.is_dir());
    assert_eq!(sandbox.servers().len(), 2);
    assert_ne!(sandbox.servers()[0].port(), sandbox.servers()[1].port());

    for (i, server) in sandbox.servers().iter().enumerate() {
        assert_eq!(server.name(), format!("s{i}"));
        assert_eq!(server.host(), "127.0.0.1");
        assert!(server.datadir().starts_with(&base));
        assert!(server.socket().starts_with(server.datadir()));
        assert_answers_on_its_port(server);
        let me = tcp_query(server, "tessera", "tessera", "select current_user()").expect("tessera logs in over TCP");
        assert!(me.starts_with("tessera@"), "current_user() = {me}");
        let dbs = server.sql("show databases").expect("show databases");
        assert!(dbs.lines().any(|l| l == "test"), "{dbs}");
        assert!(dbs.lines().any(|l| l == "sbtest"), "{dbs}");
        assert!(tcp_query(server, "tessera", "wrong", "select 1").is_err());
    }

    let pids: Vec<u32> = sandbox.servers().iter().filter_map(Server::pid).collect();
    assert_eq!(pids.len(), 2);
    kill_and_restart_keeps_port_and_data(&mut sandbox);
    stop_and_restart(&mut sandbox);
    let pids: Vec<u32> = sandbox.servers().iter().filter_map(Server::pid).collect();

    drop(sandbox);
    assert!(!base.exists(), "base dir {} still exists", base.display());
    for pid in pids {
        assert!(!process_exists(pid), "mariadbd {pid} still running");
    }
}

fn kill_and_restart_keeps_port_and_data(sandbox: &mut Sandbox) {
    let server = sandbox.server_mut(1);
    server
        .sql("create table test.t (id int primary key) engine=innodb; insert into test.t values (1), (2);")
        .expect("create table");
    let port = server.port();
    let old_pid = server.pid().expect("pid");
    server.kill().expect("kill");
    assert!(!server.is_running());
    assert!(!process_exists(old_pid));
    assert!(server.sql("select 1").is_err());

    server.start().expect("restart after kill");
    assert!(server.is_running());
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), Some(old_pid));
    assert_answers_on_its_port(server);
    let rows = server.sql("select count(*) from test.t").expect("count");
    assert_eq!(rows.trim(), "2");
    let err = server.start().expect_err("start on a running server");
    assert!(matches!(err, SandboxError::AlreadyRunning { .. }), "{err}");
}

fn stop_and_restart(sandbox: &mut Sandbox) {
    let server = sandbox.server_mut(0);
    let port = server.port();
    server.stop().expect("stop");
    assert!(!server.is_running());
    assert!(server.pid().is_none());
    server.stop().expect("stop twice is fine");
    server.start().expect("restart after stop");
    assert_eq!(server.port(), port);
    assert_answers_on_its_port(server);
    let me = tcp_query(server, "tessera", "tessera", "select current_user()").expect("login");
    assert!(me.starts_with("tessera@"));
}

#[test]
fn sandboxes_in_parallel_threads() {
    let handles: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                let sandbox = Sandbox::start(SandboxOptions::default()).expect("start");
                let server = &sandbox.servers()[0];
                assert_answers_on_its_port(server);
                (sandbox.base_dir().to_path_buf(), server.port(), sandbox)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().expect("thread")).collect();
    let mut dirs: Vec<_> = results.iter().map(|r| r.0.clone()).collect();
    let mut ports: Vec<_> = results.iter().map(|r| r.1).collect();
    dirs.sort();
    dirs.dedup();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(dirs.len(), 3);
    assert_eq!(ports.len(), 3);
    drop(results);
    for dir in dirs {
        assert!(!dir.exists());
    }
}

#[test]
fn options_are_applied_and_keep_on_drop_keeps() {
    let base = std::env::temp_dir().join(format!("tsb-opt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let sandbox = Sandbox::start(SandboxOptions {
        base_dir: Some(base.clone()),
        users: vec![("app".into(), "s3cr'et".into())],
        databases: vec!["shop".into()],
        extra_args: vec!["--max-prepared-stmt-count=500".into()],
        keep_on_drop: true,
        ..Default::default()
    })
    .expect("start");
    let server = &sandbox.servers()[0];
    assert_eq!(server.datadir(), base.join("s0"));
    let v = server.sql("select @@max_prepared_stmt_count, @@max_connections, @@log_bin");
    assert_eq!(v.expect("variables").trim(), "500\t4000\t0");
    assert_eq!(
        tcp_query(
            server,
            "app",
            "s3cr'et",
            "select count(*) from information_schema.schemata where schema_name = 'shop'"
        ),
        Ok("1".to_string())
    );
    assert!(tcp_query(server, "tessera", "tessera", "select 1").is_err());
    let pid = server.pid().expect("pid");
    drop(sandbox);
    assert!(!process_exists(pid));
    assert!(base.join("s0").join("error.log").is_file(), "kept");
    std::fs::remove_dir_all(&base).expect("clean up kept dir");
}

#[test]
fn sql_errors_carry_the_client_message() {
    let sandbox = Sandbox::start(SandboxOptions {
        databases: vec![],
        ..Default::default()
    })
    .expect("start");
    let err = sandbox.servers()[0]
        .sql("select * from no_such_db.no_such_table")
        .expect_err("must fail");
    match &err {
        SandboxError::Sql { server, stderr, .. } => {
            assert_eq!(server, "s0");
            assert!(stderr.contains("no_such_db"), "{stderr}");
        }
        other => panic!("unexpected error {other}"),
    }
    let multi = sandbox.servers()[0].sql("select 1; select 'a\tb';").expect("multi");
    assert_eq!(multi, "1\na\\tb\n");
    assert!(Path::new(sandbox.base_dir()).exists());
}

#[test]
fn restart_on_a_taken_port_reports_port_in_use() {
    let mut sandbox = Sandbox::start(SandboxOptions::default()).expect("start");
    let server = sandbox.server_mut(0);
    let port = server.port();
    server.kill().expect("kill");
    let squatter = std::net::TcpListener::bind(("127.0.0.1", port)).expect("take the port");
    let err = server.start().expect_err("port is taken");
    match &err {
        SandboxError::PortInUse { port: p, log_tail, .. } => {
            assert_eq!(*p, port);
            assert!(log_tail.contains("Address already in use"), "{log_tail}");
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(!server.is_running());
    drop(squatter);
    server.start().expect("start once the port is free");
    assert_answers_on_its_port(server);
}
