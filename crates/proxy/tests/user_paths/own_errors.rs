//! Errors Tessera raises itself carry the number and SQLSTATE one MariaDB gives for the same
//! statement (issue 44, point 5): integer overflow in a HAVING that Tessera evaluates over
//! merged shard results is 1690 (not 1105), and a COM_STMT_EXECUTE that never sent its
//! parameters' types is 1210 (not the client-range 2031 libmariadb refuses in an ERR packet).
//! Each is compared with the direct answer of one MariaDB.

use super::drivers::{cli, pymysql, Login};
use crate::common::shards::ShardedEnv;
use crate::common::{Client, Env};
use tessera_protocol::response::ErrPacket;

const CUSTOMERS_RULE: &str = r#"
[[schemas.tables]]
name = "customers"
shard_key = "id"
"#;

const SETUP: &str = "CREATE TABLE customers (id INT PRIMARY KEY, n BIGINT);\
     INSERT INTO customers VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)";

/// COUNT(*) is a BIGINT: adding BIGINT's maximum overflows, on one server and in the merge.
const OVERFLOW: &str = "SELECT COUNT(*) FROM customers HAVING COUNT(*) + 9223372036854775807 > 0";
const OVERFLOW_GROUPED: &str =
    "SELECT id % 2 AS g, SUM(n) FROM customers GROUP BY g HAVING COUNT(*) * 9223372036854775807 > 1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_in_a_merged_having_is_1690_as_on_one_server() {
    let env = ShardedEnv::start_with_tables("", CUSTOMERS_RULE).await;
    env.on_server(0, &format!("CREATE DATABASE plain; USE plain; {SETUP}"));
    let mut outside = Client::connect(env.proxy.addr.port(), "app", "app", None)
        .await
        .expect("login");
    outside.query("CREATE DATABASE shop").await.expect("logical schema");
    let mut client = env.client().await;
    for statement in SETUP.split(';') {
        client.query(statement).await.expect(statement);
    }
    let direct = Login {
        port: env.sandbox.server(0).port(),
        user: "tessera",
        password: "tessera",
        db: Some("plain"),
    };
    let through = Login {
        port: env.proxy.addr.port(),
        user: "app",
        password: "app",
        db: Some("shop"),
    };
    for sql in [OVERFLOW, OVERFLOW_GROUPED] {
        let want = cli(&direct, sql).expect_err("one server refuses");
        assert_eq!(want.code, 1690, "{sql}: {want:?}");
        for (who, got) in [("mariadb CLI", cli(&through, sql)), ("PyMySQL", pymysql(&through, sql))] {
            let got = got.expect_err("refused through Tessera");
            assert_eq!(got.code, 1690, "{who}: {sql}: {got:?}");
            assert!(got.message.contains("BIGINT value is out of range"), "{who}: {got:?}");
        }
        let e = client.query(sql).await.expect_err("test client");
        assert_eq!((e.code, e.sql_state_str()), (1690, "22003"), "{sql}");
    }
}

/// COM_STMT_EXECUTE of `SELECT ?` with a value but no types (new-params-bound 0).
fn execute_without_types(stmt_id: u32) -> Vec<u8> {
    let mut p = vec![0x17u8];
    p.extend_from_slice(&stmt_id.to_le_bytes());
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0); // null bitmap: not NULL
    p.push(0); // types not sent
    p.extend_from_slice(b"\x01a");
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_without_parameter_types_is_1210_as_on_one_server() {
    let env = Env::start("", "").await;
    let direct = env.sandbox.servers()[0].port();
    for (side, port, user) in [("direct", direct, "tessera"), ("Tessera", env.port(), "app")] {
        let mut c = Client::connect(port, user, user, Some("test")).await.expect("login");
        let (id, params, _) = c.prepare("SELECT ?").await.expect("prepare");
        assert_eq!(params, 1);
        let answer = c.raw(&execute_without_types(id)).await;
        let e = ErrPacket::parse(&answer).unwrap_or_else(|_| panic!("{side}: not an ERR: {answer:?}"));
        assert_eq!(
            (e.code, e.sql_state_str(), e.message.as_str()),
            (1210, "HY000", "Incorrect arguments to mysqld_stmt_execute"),
            "{side}"
        );
        // The session goes on, and the statement still runs with its types.
        let rows = c.execute(id, &[Some("b")]).await.expect("execute with types");
        assert_eq!(rows, vec![vec![Some("b".to_string())]], "{side}");
    }
}
