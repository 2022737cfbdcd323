//! The clients users bring, run as programs: the `mariadb` command-line client and PyMySQL
//! (from the compat suites' venv, `tests/compat/.venv`, which `make deps` builds). Each returns
//! the rows as text lines (tab-separated) or the server's error number and message.

use std::process::{Child, Command, Stdio};

/// Where a program connects.
pub struct Login<'a> {
    pub port: u16,
    pub user: &'a str,
    pub password: &'a str,
    pub db: Option<&'a str>,
}

/// An error as the client reports it.
#[derive(Debug)]
pub struct Refused {
    pub code: u16,
    pub message: String,
}

/// `sql` through `mariadb --batch --skip-column-names`: its output lines, or the error.
pub fn cli(login: &Login<'_>, sql: &str) -> Result<Vec<String>, Refused> {
    cli_with(login, &[], sql)
}

/// [`cli`] with more options (`-i`: CLIENT_IGNORE_SPACE).
pub fn cli_with(login: &Login<'_>, options: &[&str], sql: &str) -> Result<Vec<String>, Refused> {
    let mut cmd = Command::new("mariadb");
    cmd.args(options);
    cmd.args([
        "--protocol=tcp",
        "-h127.0.0.1",
        "--batch",
        "--skip-column-names",
        &format!("-P{}", login.port),
        &format!("-u{}", login.user),
        &format!("-p{}", login.password),
    ]);
    if let Some(db) = login.db {
        cmd.arg(db);
    }
    let out = cmd.args(["-e", sql]).output().expect("mariadb runs");
    if out.status.success() {
        return Ok(lines(&out.stdout));
    }
    // "ERROR 1235 (42000) at line 1: message"
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = err
        .find("ERROR ")
        .map(|at| &err[at + 6..])
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Err(Refused { code, message: err })
}

/// `sql` through PyMySQL: each row's values tab-separated (NULL as `NULL`), or the error.
/// Statements separated by `;` and a newline run one by one; the last one's rows are read.
pub fn pymysql(login: &Login<'_>, sql: &str) -> Result<Vec<String>, Refused> {
    run_pymysql(login, sql, false)
}

/// The result's columns as PyMySQL describes them, one line each: name, type code, length.
pub fn pymysql_columns(login: &Login<'_>, sql: &str) -> Result<Vec<String>, Refused> {
    run_pymysql(login, sql, true)
}

/// The compat venv's Python (with PyMySQL), or the system's.
pub fn python() -> &'static str {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/compat/.venv/bin/python");
    if std::path::Path::new(root).exists() {
        root
    } else {
        "python3"
    }
}

/// A client program started on `sql` (statements separated by `;` and a newline) that goes
/// on after an error and prints each statement's rows (and `ERROR <n>`) as it gets them, so
/// that a test can act while it runs: the mariadb CLI (`--unbuffered --force`) or PyMySQL.
pub fn spawn_unbuffered(program: Program, login: &Login<'_>, sql: &str) -> Child {
    let mut cmd = match program {
        Program::Cli => {
            let mut cmd = Command::new("mariadb");
            cmd.args(["--protocol=tcp", "-h127.0.0.1", "--batch", "--skip-column-names"]);
            cmd.args(["--unbuffered", "--force", &format!("-P{}", login.port)]);
            cmd.args([format!("-u{}", login.user), format!("-p{}", login.password)]);
            cmd.args(login.db).args(["-e", sql]);
            cmd
        }
        Program::PyMySql => {
            let mut cmd = Command::new(python());
            cmd.args([
                "-u",
                "-c",
                UNBUFFERED_PYMYSQL,
                &login.port.to_string(),
                login.user,
                login.password,
            ]);
            cmd.arg(login.db.unwrap_or("")).arg(sql);
            cmd
        }
    };
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client program starts")
}

/// The client programs of [`spawn_unbuffered`].
#[derive(Clone, Copy, Debug)]
pub enum Program {
    Cli,
    PyMySql,
}

const UNBUFFERED_PYMYSQL: &str = r#"
import sys, pymysql
port, user, password, db, sql = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] or None, sys.argv[5]
c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=password, database=db)
cur = c.cursor()
for statement in sql.split(";\n"):
    try:
        cur.execute(statement)
        for row in cur.fetchall():
            print("\t".join("NULL" if v is None else str(v) for v in row), flush=True)
    except pymysql.err.MySQLError as e:
        print(f"ERROR {e.args[0]}", file=sys.stderr, flush=True)
"#;

fn run_pymysql(login: &Login<'_>, sql: &str, columns: bool) -> Result<Vec<String>, Refused> {
    let python = python();
    let script = r#"
import sys, pymysql
port, user, password, db, sql = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] or None, sys.argv[5]
try:
    c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=password, database=db)
    cur = c.cursor()
    for statement in sql.split(";\n"):
        cur.execute(statement)
    if sys.argv[6] == "1":
        for d in cur.description or []:
            print(f"{d[0]}\t{d[1]}\t{d[3]}")
        sys.exit(0)
    for row in cur.fetchall():
        print("\t".join("NULL" if v is None else str(v) for v in row))
except pymysql.err.MySQLError as e:
    print(f"{e.args[0]}\t{e.args[1] if len(e.args) > 1 else ''}", file=sys.stderr)
    sys.exit(3)
"#;
    let out = Command::new(python)
        .args(["-c", script, &login.port.to_string(), login.user, login.password])
        .arg(login.db.unwrap_or(""))
        .arg(sql)
        .arg(if columns { "1" } else { "0" })
        .output()
        .expect("python runs");
    match out.status.code() {
        Some(0) => Ok(lines(&out.stdout)),
        Some(3) => {
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            let (code, message) = err.trim_end().split_once('\t').unwrap_or(("0", &err));
            Err(Refused {
                code: code.parse().unwrap_or(0),
                message: message.to_string(),
            })
        }
        _ => panic!("PyMySQL failed to run: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out).lines().map(str::to_string).collect()
}
