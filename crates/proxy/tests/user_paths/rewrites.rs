//! Values Tessera writes into a statement (ROW_COUNT(), FOUND_ROWS(), CONNECTION_ID(), USER()
//! and its kin) keep the column name and type one server gives: an unnamed select item is
//! named by its original text, and every value is typed as the function is (issue 43, point
//! 11). DDL and stored program bodies are never rewritten. Checked with PyMySQL's column
//! descriptions and the `mariadb` CLI, through Tessera and directly.

use super::drivers::{cli, pymysql_columns, Login};
use crate::common::Env;

fn logins(env: &Env) -> [Login<'static>; 2] {
    let through = Login {
        port: env.port(),
        user: "app",
        password: "app",
        db: Some("test"),
    };
    let direct = Login {
        port: env.sandbox.servers()[0].port(),
        user: "tessera",
        password: "tessera",
        db: Some("test"),
    };
    [through, direct]
}

/// Statements whose result columns (name, type, length) must read the same on both sides.
const SELECTS: &[&str] = &[
    "SELECT hex(concat(row_count()))",
    "SELECT user() like \"%@%\"",
    "SELECT concat('<', user(), '>')",
    "SELECT ROW_COUNT() + 1, FOUND_ROWS() AS f, CONNECTION_ID() IS NOT NULL, ROW_COUNT()",
    "SELECT CONNECTION_ID(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER, current_user()",
    "select distinct  Row_Count ( ) rc, concat(found_rows(), 'x') 'named', 1 + row_count()",
    "SELECT ROW_COUNT() FROM (SELECT 1) d UNION SELECT 2",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewritten_values_keep_the_servers_column_names_and_types() {
    let env = Env::start("", "").await;
    let [through, direct] = logins(&env);
    for sql in SELECTS {
        let got = pymysql_columns(&through, sql).expect("through Tessera");
        let want = pymysql_columns(&direct, sql).expect("directly");
        assert_eq!(got, want, "column name, type code and length of {sql}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_and_stored_program_bodies_are_never_rewritten() {
    let env = Env::start("", "").await;
    let [through, direct] = logins(&env);
    let table = |login: &Login<'_>, name: &str| {
        let create =
            format!("CREATE TABLE {name} SELECT concat(row_count()) AS c1, connection_id() AS c2, user() AS c3");
        cli(login, &create).expect("CREATE TABLE ... SELECT");
        let shown = cli(login, &format!("SHOW CREATE TABLE {name}")).expect("shown");
        shown.join("\n").replace(name, "t")
    };
    assert_eq!(
        table(&through, "rw_through"),
        table(&direct, "rw_direct"),
        "column types of CREATE ... SELECT"
    );

    for login in [&through, &direct] {
        let refused = cli(login, "CREATE TABLE rw_default (a INT DEFAULT ROW_COUNT())").expect_err("refused");
        assert_eq!(refused.code, 1901, "{refused:?}");
    }
    let body = |login: &Login<'_>, name: &str| {
        cli(
            login,
            &format!("CREATE FUNCTION {name}() RETURNS TEXT RETURN CONCAT(ROW_COUNT(), USER())"),
        )
        .expect("function");
        let sql = format!(
            "SELECT ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'test' AND ROUTINE_NAME = '{name}'"
        );
        cli(login, &sql).expect("definition")
    };
    let stored = body(&through, "rw_f_through");
    assert_eq!(stored, body(&direct, "rw_f_direct"));
    assert_eq!(stored, ["RETURN CONCAT(ROW_COUNT(), USER())"], "the body as written");
}
