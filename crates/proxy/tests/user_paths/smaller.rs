//! Smaller things users meet (issue 43, points 10 and 12), each through the `mariadb` CLI and
//! PyMySQL, through Tessera and directly: IS_USED_LOCK() answers the holder's connection id
//! (Tessera's, the one CONNECTION_ID() and KILL use), FOUND_ROWS() after `INSERT ... SELECT`
//! and `CREATE TABLE ... SELECT` counts their rows, and `mariadb -i` (CLIENT_IGNORE_SPACE)
//! reads `COUNT (*)` as the server does; with `sql_auto_is_null` on, `WHERE id IS NULL` finds
//! the row the client just inserted; SHOW PROCESSLIST and information_schema.PROCESSLIST list
//! the clients' own sessions (their connection ids, users, states and statements), so that a
//! tool that reads the list and KILLs an id reaches the right client.

use super::drivers::{cli, cli_with, pymysql, Login};
use super::sides::Side;
use crate::common::{Client, Env};

fn login(side: Side) -> Login<'static> {
    side.login()
}

fn sides(env: &Env) -> [Side; 2] {
    [Side::Proxy(env.port()), Side::Direct(env.sandbox.servers()[0].port())]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_used_lock_answers_the_holders_connection_id() {
    let env = Env::start("", "").await;
    for side in sides(&env) {
        let mut holder: Client = side.client().await;
        let id = holder.value("SELECT CONNECTION_ID()").await.expect("id");
        assert_eq!(
            holder.value("SELECT GET_LOCK('point10', 5)").await.as_deref(),
            Some("1")
        );
        let sql = "SELECT IS_USED_LOCK('point10'), IS_USED_LOCK('nobody') IS NULL, IS_FREE_LOCK('point10')";
        let want = vec![format!("{id}\t1\t0")];
        assert_eq!(cli(&login(side), sql).expect("CLI"), want, "mariadb CLI");
        assert_eq!(pymysql(&login(side), sql).expect("PyMySQL"), want, "PyMySQL");
        assert_eq!(
            holder.value("SELECT IS_USED_LOCK('point10')").await,
            Some(id.clone()),
            "the holder itself"
        );
        holder.query("DO RELEASE_LOCK('point10')").await.expect("release");
        let after = cli(&login(side), "SELECT IS_USED_LOCK('point10') IS NULL").expect("CLI");
        assert_eq!(after, ["1"], "released");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn found_rows_after_a_select_into_a_table_counts_its_rows() {
    let env = Env::start("", "").await;
    let script = |t: &str| {
        format!(
            "CREATE TABLE {t} (a INT);\nINSERT INTO {t} SELECT seq FROM seq_1_to_5;\nSELECT FOUND_ROWS();\n\
             CREATE TABLE {t}_c SELECT seq FROM seq_1_to_7;\nSELECT FOUND_ROWS();\n\
             INSERT INTO {t} VALUES (1);\nSELECT FOUND_ROWS();\nDROP TABLE {t}, {t}_c;\nSELECT 'done'"
        )
    };
    for (n, side) in sides(&env).into_iter().enumerate() {
        let through_cli = cli(&login(side), &script(&format!("fr_cli_{n}"))).expect("CLI");
        assert_eq!(through_cli, ["5", "7", "1", "done"], "mariadb CLI");
        let upto = |t: &str| {
            let text = script(t);
            text[..text.find("\nCREATE TABLE").unwrap() - 1].to_string()
        };
        assert_eq!(
            pymysql(&login(side), &upto(&format!("fr_py_{n}"))).expect("PyMySQL"),
            ["5"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_space_from_the_client_flag_reads_as_the_server_reads_it() {
    let env = Env::start("", "").await;
    for side in sides(&env) {
        let spaced = "SELECT COUNT (*) FROM (SELECT 1) d";
        assert_eq!(cli_with(&login(side), &["-i"], spaced).expect("mariadb -i"), ["1"]);
        let mode = cli_with(
            &login(side),
            &["-i"],
            "SELECT FIND_IN_SET('IGNORE_SPACE', @@sql_mode) > 0",
        )
        .expect("mode");
        assert_eq!(mode, ["1"]);
        let refused = cli(&login(side), spaced).expect_err("without -i a syntax error");
        assert_eq!(refused.code, 1064, "{refused:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_auto_is_null_finds_the_row_just_inserted() {
    let env = Env::start("", "").await;
    for (n, side) in sides(&env).into_iter().enumerate() {
        let t = format!("ain_{n}");
        let script = format!(
            "CREATE TABLE {t} (id INT AUTO_INCREMENT PRIMARY KEY, v INT);\nINSERT INTO {t} (v) VALUES (1), (2);\n\
             SET sql_auto_is_null = 1;\nINSERT INTO {t} (v) VALUES (7);\nSELECT id, v FROM {t} WHERE id IS NULL"
        );
        assert_eq!(cli(&login(side), &script).expect("CLI"), ["3\t7"], "mariadb CLI");
        let again = script.replacen(
            &format!("CREATE TABLE {t} (id INT AUTO_INCREMENT PRIMARY KEY, v INT);\n"),
            "",
            1,
        );
        assert_eq!(pymysql(&login(side), &again).expect("PyMySQL"), ["6\t7"], "PyMySQL");
        let fresh = cli(&login(side), &format!("SELECT COUNT(*) FROM {t} WHERE id IS NULL")).expect("CLI");
        assert_eq!(fresh, ["0"], "another client has sql_auto_is_null off");
        // mtr's check_constraint: the insert before the SET (its id read back from the
        // connection since) is the one found.
        let before = format!(
            "INSERT INTO {t} (v) VALUES (9);
SET sql_auto_is_null = 1;
SELECT v FROM {t} WHERE id IS NULL"
        );
        assert_eq!(
            cli(&login(side), &before).expect("CLI"),
            ["9"],
            "inserted before the SET"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_takes_an_expression_as_the_server_does() {
    let env = Env::start("", "").await;
    for side in sides(&env) {
        let mut victim: Client = side.client().await;
        let id = victim.value("SELECT CONNECTION_ID()").await.expect("id");
        let kill = format!("SET @victim = {id};\nKILL CONNECTION @victim");
        pymysql(&login(side), &kill).expect("KILL @victim through PyMySQL");
        assert!(
            victim.try_query("SELECT 1").await.is_err(),
            "the victim's connection is gone"
        );
        let mut own: Client = side.client().await;
        let e = own
            .query("KILL (CONNECTION_ID() + 0)")
            .await
            .expect_err("killed itself");
        assert_eq!(e.code, 1927, "{e:?}");
        let other = cli(&login(side), "KILL 4000000000 - 1").expect_err("no such connection");
        assert_eq!(other.code, 1094, "{other:?}");
        // A sequence (or a stored function) in the expression is refused (mtr's `parser`); a
        // plain subquery is evaluated.
        let sequence = cli(&login(side), "KILL (SELECT 1) + LASTVAL(s)").expect_err("sequence refused");
        assert_eq!(sequence.code, 1970, "{sequence:?}");
        let subquery = cli(&login(side), "KILL (SELECT 3999999000) + 5").expect_err("no such connection");
        assert_eq!(subquery.code, 1094, "{subquery:?}");
    }
}

/// The process list through Tessera lists Tessera's sessions as the server lists its threads:
/// an idle client as Sleep, a running one with its statement, by the ids KILL takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_list_shows_the_clients_sessions() {
    let env = Env::start("", "").await;
    for side in sides(&env).into_iter().rev() {
        let user = login(side).user;
        let mut idle: Client = side.client().await;
        let idle_id = idle.value("SELECT CONNECTION_ID()").await.expect("id");
        let mut busy: Client = side.client().await;
        let busy_id = busy.value("SELECT CONNECTION_ID()").await.expect("id");
        let sleeping = tokio::spawn(async move {
            let answer = match busy.query("SELECT SLEEP(60)").await {
                Ok(_) => "answered".to_string(),
                Err(e) => e.code.to_string(),
            };
            (busy, answer)
        });
        // Wait until the list shows the statement running (a state, not a time).
        let running = format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {busy_id} AND COMMAND = 'Query' \
             AND INFO = 'SELECT SLEEP(60)' AND USER = '{user}'"
        );
        let mut seen = false;
        for _ in 0..600 {
            if cli(&login(side), &running).expect("CLI") == ["1"] {
                seen = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert!(seen, "{side:?}: the running statement is listed");
        let idle_row = format!("SELECT COMMAND, DB FROM information_schema.processlist p WHERE p.ID = {idle_id}");
        assert_eq!(cli(&login(side), &idle_row).expect("CLI"), ["Sleep\ttest"], "{side:?}");
        assert_eq!(
            pymysql(&login(side), &idle_row).expect("PyMySQL"),
            ["Sleep\ttest"],
            "{side:?}"
        );
        let show = cli(&login(side), "SHOW FULL PROCESSLIST").expect("CLI");
        for id in [&idle_id, &busy_id] {
            assert!(
                show.iter().any(|row| row.split('\t').next() == Some(id.as_str())),
                "{side:?}: {id} in {show:?}"
            );
        }
        let own = cli(&login(side), "SHOW PROCESSLIST").expect("CLI");
        assert!(own.iter().any(|r| r.contains("SHOW PROCESSLIST")), "{side:?}: {own:?}");
        // A tool KILLs the id the list gave it: the right client's statement ends.
        cli(&login(side), &format!("KILL QUERY {busy_id}")).expect("KILL QUERY");
        let (mut busy, answer) = sleeping.await.expect("sleeper");
        assert_eq!(answer, "1317", "{side:?}: SLEEP interrupted");
        assert_eq!(
            busy.value("SELECT 2").await.as_deref(),
            Some("2"),
            "{side:?}: still connected"
        );
        assert_eq!(
            idle.value("SELECT 3").await.as_deref(),
            Some("3"),
            "{side:?}: idle client untouched"
        );
    }
}

/// One COM_CHANGE_USER as libmariadb sends it (declaring caching_sha2_password, so that both
/// MariaDB and Tessera switch to mysql_native_password with a new challenge): "OK" or the
/// error number.
async fn change_user(c: &mut Client, (user, password): (&str, &str)) -> String {
    let mut p = vec![0x11u8];
    p.extend_from_slice(user.as_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(b"test\0");
    p.extend_from_slice(&45u16.to_le_bytes());
    p.extend_from_slice(b"caching_sha2_password\0");
    let mut answer = c.raw(&p).await;
    while answer.first() == Some(&0xfe) && answer.len() > 1 {
        let (_, scramble) = tessera_protocol::handshake::parse_auth_switch(&answer).expect("auth switch");
        let response = tessera_protocol::auth::native_scramble(password.as_bytes(), &scramble);
        c.io.send(&response).await.expect("send");
        answer = c.io.read_packet().await.expect("answer");
    }
    match answer.first() {
        Some(0x00) => "OK".into(),
        _ => tessera_protocol::response::ErrPacket::parse(&answer)
            .expect("err")
            .code
            .to_string(),
    }
}

/// MariaDB's `change_user_notembedded` (MDEV-3915): a refused COM_CHANGE_USER answers 1045 and
/// the connection goes on as the user it was, reset (user variables gone); the fourth refusal
/// and every attempt after it answer 1047, a good password included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_change_user_keeps_the_connection_for_three_tries() {
    let env = Env::start("", "").await;
    for side in sides(&env) {
        let own = (login(side).user, login(side).password);
        let mut c: Client = side.client().await;
        c.query("SET @kept = 1").await.expect("set");
        let mut seen = vec![change_user(&mut c, ("nobody", "bar")).await];
        let after = "SELECT CONCAT_WS(',', IFNULL(@kept, 'reset'), DATABASE(), SUBSTRING_INDEX(USER(), '@', 1))";
        seen.push(c.value(after).await.expect("after a refusal"));
        seen.push(change_user(&mut c, ("nobody", "")).await);
        seen.push(change_user(&mut c, own).await);
        seen.push(change_user(&mut c, (own.0, "wrong")).await);
        seen.push(change_user(&mut c, ("nobody", "bar")).await);
        seen.push(change_user(&mut c, own).await);
        seen.push(c.value("SELECT 'still connected'").await.expect("connected"));
        let want = [
            "1045",
            &format!("reset,test,{}", own.0),
            "1045",
            "OK",
            "1045",
            "1047",
            "1047",
            "still connected",
        ];
        assert_eq!(seen, want, "{side:?}");
    }
}

/// Values session tracking reports in a form a plain replay refuses: a NULL
/// `default_tmp_storage_engine`, `enforce_storage_engine` or `innodb_tmpdir` reads back as an
/// empty string (refused, 1286 or 1231), and `system_versioning_asof = DEFAULT` as `DEFAULT`
/// (refused as a string). Each survives the replay onto the connection the next statements run on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_tracking_reports_in_another_form_are_replayed_as_set() {
    let env = Env::start("", "").await;
    let script = "SET default_tmp_storage_engine = NULL, enforce_storage_engine = NULL, innodb_tmpdir = NULL;\n\
                  SET system_versioning_asof = '2020-01-01 00:00:00';\n\
                  SET system_versioning_asof = DEFAULT;\n\
                  SELECT @@default_tmp_storage_engine IS NULL, @@enforce_storage_engine IS NULL, @@innodb_tmpdir IS NULL;\n\
                  SELECT COUNT(*) > 0 FROM information_schema.ENGINES;\n\
                  CREATE TEMPORARY TABLE null_engine (a INT);\n\
                  SELECT COUNT(*) FROM null_engine;\n\
                  SELECT @@default_tmp_storage_engine IS NULL, @@system_versioning_asof";
    for side in sides(&env) {
        let want = ["1\t1\t1", "1", "0", "1\tDEFAULT"];
        assert_eq!(cli(&login(side), script).expect("CLI"), want, "{side:?}");
        assert_eq!(
            pymysql(&login(side), script).expect("PyMySQL"),
            ["1\tDEFAULT"],
            "{side:?}"
        );
    }
}

/// FOUND_ROWS() by MariaDB's rules (mtr's `select_found` and `ctype_*`): a `LIMIT` offset
/// counts the rows it skipped, an offset past the end and a `UNION ... LIMIT` count every row,
/// `SELECT ... INTO` counts what it selected, and SHOW CREATE, SHOW WARNINGS, SHOW PROCESSLIST,
/// VALUES and EXPLAIN leave the number as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn found_rows_follows_the_servers_rules() {
    let env = Env::start("", "").await;
    let probes = [
        "SELECT a FROM fr LIMIT 1, 2",
        "SELECT a FROM fr LIMIT 10, 2",
        "SELECT a FROM fr ORDER BY a DESC LIMIT 2 OFFSET 1",
        "SELECT a FROM fr UNION ALL SELECT a FROM fr LIMIT 2",
        "SELECT a INTO @x FROM fr LIMIT 2, 1",
        "SELECT a FROM fr LIMIT 1, 3;\nSHOW CREATE TABLE fr",
        "SELECT a FROM fr LIMIT 1, 3;\nSHOW WARNINGS",
        "SELECT a FROM fr LIMIT 1, 3;\nSHOW PROCESSLIST",
        "SELECT a FROM fr LIMIT 1, 3;\nVALUES (1), (2)",
        "SELECT a FROM fr LIMIT 1, 3;\nEXPLAIN SELECT * FROM fr",
        "SHOW TABLES LIKE 'fr'",
    ];
    let mut script =
        String::from("CREATE OR REPLACE TABLE fr (a INT PRIMARY KEY);\nINSERT INTO fr VALUES (1), (2), (3), (4), (5)");
    for (i, p) in probes.iter().enumerate() {
        script.push_str(&format!(";\n{p};\nSET @f{i} = FOUND_ROWS()"));
    }
    let all = (0..probes.len())
        .map(|i| format!("@f{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    script.push_str(&format!(";\nSELECT {all}"));
    let want = "3\t5\t3\t10\t3\t4\t4\t4\t4\t4\t1";
    for side in sides(&env) {
        let through_cli = cli(&login(side), &script).expect("CLI");
        assert_eq!(
            through_cli.last().map(String::as_str),
            Some(want),
            "mariadb CLI {side:?}"
        );
        assert_eq!(
            pymysql(&login(side), &script).expect("PyMySQL"),
            [want],
            "PyMySQL {side:?}"
        );
    }
}

/// MariaDB pads the length of an OK packet's session-state information while the default
/// database has character set ucs2 (mtr's `ctype_ucs`). Tessera must still read the change of
/// database it reports: a client that dropped its default database leaves its connection with
/// none, and the next client on that connection must get its own database back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ucs2_default_database_keeps_the_database_known() {
    let env = Env::start("", "").await;
    for side in sides(&env) {
        let script = "SET character_set_server = ucs2, collation_server = ucs2_general_ci;\n\
                      CREATE DATABASE ucs_db;\nUSE ucs_db;\nCREATE TABLE t1 (c CHAR(10), KEY(c));\n\
                      INSERT INTO t1 VALUES ('aaa'), ('aaaa');\nSELECT COUNT(*) FROM t1;\nDROP TABLE t1;\n\
                      DROP DATABASE ucs_db;\nSELECT DATABASE() IS NULL";
        assert_eq!(cli(&login(side), script).expect("CLI"), ["2", "1"], "{side:?}");
        for n in 0..3 {
            let next = format!("CREATE TABLE after_ucs_{n} (a INT);\nDROP TABLE after_ucs_{n};\nSELECT DATABASE()");
            assert_eq!(cli(&login(side), &next).expect("CLI"), ["test"], "{side:?} client {n}");
        }
        assert_eq!(
            pymysql(&login(side), &script.replace("ucs_db", "ucs_py")).expect("PyMySQL"),
            ["1"],
            "{side:?}"
        );
        let next = "CREATE TABLE after_ucs_py (a INT);\nDROP TABLE after_ucs_py;\nSELECT DATABASE()";
        assert_eq!(pymysql(&login(side), next).expect("PyMySQL"), ["test"], "{side:?}");
    }
}

/// `GET DIAGNOSTICS @v = ROW_COUNT` reads the client's ROW_COUNT(), which GET DIAGNOSTICS itself
/// does not reset (mtr's `get_diagnostics`), and `NUMBER` the conditions of its last statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_diagnostics_reads_the_clients_row_count() {
    let env = Env::start("", "").await;
    let script = "CREATE OR REPLACE TABLE gd (a INT);\nINSERT INTO gd VALUES (1);\n\
                  GET DIAGNOSTICS @var1 = ROW_COUNT;\nGET DIAGNOSTICS @var2 = ROW_COUNT;\nSELECT @var1, @var2;\n\
                  INSERT INTO gd VALUES (1), (2);\nGET CURRENT DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT;\n\
                  SELECT @n, @r, ROW_COUNT();\nSELECT CAST('1x' AS SIGNED) INTO @c;\n\
                  GET DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT;\nSHOW COUNT(*) WARNINGS;\nSELECT @n, @r";
    for side in sides(&env) {
        let want = ["1\t1", "0\t2\t2", "1", "1\t1"];
        assert_eq!(cli(&login(side), script).expect("CLI"), want, "{side:?}");
        assert_eq!(pymysql(&login(side), script).expect("PyMySQL"), ["1\t1"], "{side:?}");
    }
}

/// MariaDB's `mysql_not_windows`: a default database at login that is not valid in the
/// client's character set is refused with 1300 naming that character set (the pool's
/// connections speak utf8mb4; the session's character set goes to the server first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_database_name_at_login_is_judged_in_the_clients_character_set() {
    let env = Env::start("", "").await;
    for side in sides(&env) {
        for (charset, named) in [("utf8", "utf8mb3"), ("binary", "binary")] {
            let mut bad = login(side);
            bad.db = Some("test\u{1F601} ");
            let option = format!("--default-character-set={charset}");
            let refused = cli_with(&bad, &[&option], "SELECT 1").expect_err("refused");
            assert_eq!(refused.code, 1300, "{side:?} {charset}: {refused:?}");
            let says = format!("Invalid {named} character string");
            assert!(refused.message.contains(&says), "{side:?} {charset}: {refused:?}");
        }
        assert_eq!(cli(&login(side), "SELECT 1").expect("a good login"), ["1"]);
    }
}

/// A stored function (and a procedure) reading LAST_INSERT_ID() reads its client's, as
/// directly: the connection it runs on is given the session's value first, never another
/// client's (the mariadb CLI and PyMySQL, then two clients interleaved on one pool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_insert_id_inside_stored_code_is_the_clients() {
    let env = Env::start("", "").await;
    env.backend_sql("CREATE TABLE test.lii_t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)");
    env.backend_sql("CREATE FUNCTION test.lii_f() RETURNS BIGINT RETURN LAST_INSERT_ID()");
    env.backend_sql("CREATE PROCEDURE test.lii_p() SELECT LAST_INSERT_ID() = @want");
    let script = "INSERT INTO lii_t (v) VALUES (1);\nSET @want = LAST_INSERT_ID();\nSELECT 1;\n\
                  SELECT lii_f() = @want, @want > 0;\nSET @got = lii_f();\nSELECT @got = @want;\nCALL lii_p()";
    let readings = |side: Side| {
        let by_cli = cli(&login(side), script).expect("CLI");
        let by_driver = pymysql(&login(side), script).expect("PyMySQL");
        let fresh = cli(&login(side), "SELECT lii_f()").expect("CLI");
        (by_cli, by_driver, fresh)
    };
    let [proxy, direct] = sides(&env);
    let want = readings(direct);
    assert_eq!(want.0, ["1", "1\t1", "1", "1"], "directly, mariadb CLI");
    assert_eq!(want.2, ["0"], "directly, a new client");
    assert_eq!(readings(proxy), want, "through Tessera (CLI, PyMySQL, a new client)");
    for side in [proxy, direct] {
        let mut a = side.client().await;
        let mut b = side.client().await;
        a.query("INSERT INTO lii_t (v) VALUES (2)").await.expect("A inserts");
        let a_id = a.value("SELECT LAST_INSERT_ID()").await;
        b.query("INSERT INTO lii_t (v) VALUES (3)").await.expect("B inserts");
        let b_id = b.value("SELECT LAST_INSERT_ID()").await;
        assert_ne!(a_id, b_id);
        assert_eq!(a.value("SELECT lii_f()").await, a_id, "A, {side:?}");
        assert_eq!(b.value("SELECT lii_f()").await, b_id, "B, {side:?}");
        assert_eq!(a.value("DO 1").await, None);
        assert_eq!(a.value("SELECT lii_f()").await, a_id, "A again, {side:?}");
    }
}
