//! The server ends a connection while its client is idle (MariaDB's `transaction_timeout`
//! test): with `idle_transaction_timeout` a server closes the connection of a transaction left
//! idle. Through Tessera the held connection is the one closed; the client's connection must
//! close too, so that PyMySQL sees what it sees directly (2006 or 2013 on the next statement)
//! and never an answer outside the transaction it believes open. Run through Tessera and
//! directly; the test waits on progress (the server thread gone, Tessera's count of lost
//! backends), not on a sleep.

use super::drivers::{python, Login};
use super::sides::Side;
use crate::common::{wait_for, Client, Env};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// PyMySQL: open a transaction with a 1 s idle timeout, print CONNECTION_ID(), wait for a
/// line on stdin, then run one more statement and print its error number (or "answered").
const IDLE_CLIENT: &str = r#"
import sys, pymysql
port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=password, database="test", autocommit=False)
cur = c.cursor()
cur.execute("SET idle_transaction_timeout = 1")
cur.execute("BEGIN")
cur.execute("INSERT INTO idle_t VALUES (1)")
cur.execute("SELECT CONNECTION_ID()")
print(cur.fetchone()[0], flush=True)
sys.stdin.readline()
try:
    cur.execute("SELECT COUNT(*) FROM idle_t")
    print("answered", cur.fetchone()[0], flush=True)
except pymysql.err.MySQLError as e:
    print(e.args[0], flush=True)
"#;

/// What the idle client's next statement met, after the server ended its connection.
async fn next_statement_after_idle_end(env: &Env, side: Side, login: &Login<'_>) -> String {
    let lost_before = env.metric_sum("tessera_backend_lost_total");
    let mut child = Command::new(python())
        .args(["-c", IDLE_CLIENT, &login.port.to_string(), login.user, login.password])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("connection id");
    let id = line.trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "{side:?}: no connection id: {line:?}");
    match side {
        Side::Direct(_) => {
            let probe = format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {id}");
            wait_for("the server ended the idle transaction", || {
                env.backend_sql(&probe).trim() == "0"
            })
            .await
        }
        Side::Proxy(_) => {
            wait_for("Tessera saw the held connection end", || {
                env.metric_sum("tessera_backend_lost_total") > lost_before
            })
            .await
        }
    }
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin).expect("go on");
    line.clear();
    out.read_line(&mut line).expect("outcome");
    let _ = child.wait();
    line.trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_transaction_the_server_ends_ends_the_clients_connection() {
    let env = Env::start("", "").await;
    env.backend_sql("CREATE TABLE test.idle_t (a INT) ENGINE=InnoDB");
    let sides = [Side::Proxy(env.port()), Side::Direct(env.sandbox.servers()[0].port())];
    for side in sides {
        let login = side.login();
        let outcome = next_statement_after_idle_end(&env, side, &login).await;
        assert!(
            outcome == "2006" || outcome == "2013",
            "{side:?}: the next statement after the server ended the transaction: {outcome}"
        );
        // The transaction went with the connection; the proxy serves the next client.
        let mut next = side.client().await;
        assert_eq!(
            next.value("SELECT COUNT(*) FROM idle_t").await.as_deref(),
            Some("0"),
            "{side:?}"
        );
        assert_eq!(
            next.value("SELECT @@in_transaction").await.as_deref(),
            Some("0"),
            "{side:?}"
        );
    }
    let mut c = Client::connect(env.port(), "app", "app", Some("test"))
        .await
        .expect("login");
    assert_eq!(c.value("SELECT 1").await.as_deref(), Some("1"));
}
