//! Property-style robustness tests: random and truncated inputs never panic and the
//! public functions agree with each other.

use std::mem::discriminant;

use tessera_sql::{
    assigned_user_variables, classify, references_user_variables, split_statements, starts_with_keyword, Flags, Lexer,
    StatementKind,
};

/// Small deterministic xorshift generator (no dev-dependency needed).
struct Rng(u64);

/// Iterations per random test; raise with `TESSERA_SQL_FUZZ_ITERS` for a longer run.
fn iterations() -> usize {
    std::env::var("TESSERA_SQL_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Seed offset; change with `TESSERA_SQL_FUZZ_SEED` to explore other inputs.
fn seed(base: u64) -> u64 {
    let extra: u64 = std::env::var("TESSERA_SQL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (base ^ extra.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1
}

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "SELECT",
    "select",
    " ",
    "  ",
    "\n",
    "\t",
    "'",
    "\"",
    "`",
    "``",
    "''",
    "\\",
    "/*",
    "*/",
    "/*!",
    "/*!50110",
    "/*!40101 ",
    "/*M!",
    "/*M!100101",
    "/*+",
    "--",
    "-- ",
    "#",
    "@",
    "@@",
    "@'",
    "@`",
    "@\"",
    "@a",
    "@@session.",
    "@@global.x",
    ";",
    "(",
    ")",
    ",",
    ".",
    "?",
    ":=",
    "=",
    "SET",
    "INTO",
    "FOR",
    "UPDATE",
    "SHARE",
    "LOCK",
    "IN",
    "MODE",
    "KILL",
    "QUERY",
    "ID",
    "HARD",
    "0x",
    "0x1F",
    "X'",
    "b'",
    "1e",
    "1.5",
    "42",
    "é",
    "😀",
    "\u{0}",
    "DROP",
    "TEMPORARY",
    "TABLE",
    "TABLES",
    "IF",
    "NOT",
    "EXISTS",
    "CREATE",
    "OR",
    "REPLACE",
    "WITH",
    "AS",
    "LAST_INSERT_ID",
    "GET_LOCK",
    "STATEMENT",
    "LOAD",
    "DATA",
    "LOCAL",
    "INFILE",
    "USE",
    "START",
    "TRANSACTION",
    "READ",
    "ONLY",
    "ROLLBACK",
    "TO",
    "GLOBAL",
    "SESSION",
    "NAMES",
    "master",
    "slave",
    "tessera:primary",
    "tessera:replica",
    "db",
    "t1",
    "OUTFILE",
];

const REAL: &[&str] = &[
    "SELECT c FROM sbtest1 WHERE id=?",
    "UPDATE sbtest1 SET k=k+1 WHERE id=?",
    "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
    "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;",
    "/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */",
    "/*+ tessera:primary */ SELECT GET_LOCK('a', 1), LAST_INSERT_ID(5) FOR UPDATE",
    "SELECT 'it''s', \"a\\\"b\", `c``d` FROM t -- c\n WHERE x = @`q q` # d",
    "CREATE OR REPLACE TEMPORARY TABLE IF NOT EXISTS `db`.`t``x` SELECT 1",
    "DROP TEMPORARY TABLE IF EXISTS a, db.b, `c`",
    "SET STATEMENT max_statement_time=1 FOR UPDATE t SET a = 1",
    "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r",
    "SELECT a INTO @x, @y FROM t LOCK IN SHARE MODE; SET @z := 1",
    "LOAD DATA LOCAL INFILE 'f' INTO TABLE t (a, @b) SET c = @b",
    "KILL HARD QUERY 42",
    "/*M!100101 SET STATEMENT x=1 FOR */ SELECT X'0A', b'01', 0x1F, 1.5e-3",
    "CREATE DEFINER=`root`@`localhost` PROCEDURE p() BEGIN SELECT 1; END",
    "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
    "SELECT 'ünïcødé 😀', `tâble` FROM été WHERE x = 'é'",
];

fn check_lexer(sql: &str) {
    let mut last_end = 0;
    let mut count = 0;
    for t in Lexer::new(sql) {
        assert!(!t.text.is_empty(), "{sql:?}");
        assert!(t.offset >= last_end, "{sql:?}");
        assert_eq!(&sql[t.offset..t.end()], t.text, "{sql:?}");
        last_end = t.end();
        count += 1;
        assert!(count <= sql.len(), "{sql:?}");
    }
}

fn check(sql: &str) {
    check_lexer(sql);
    let c = classify(sql);
    assert_eq!(Flags::from_bits_truncate(c.flags.bits()), c.flags);
    let pieces = split_statements(sql);
    assert_eq!(pieces.is_empty(), c.kind == StatementKind::Empty, "{sql:?}");
    assert_eq!(pieces.len() > 1, c.flags.contains(Flags::MULTI_STATEMENT), "{sql:?}");
    // A piece is classified like the statement it came from, except that a `--` cut
    // off by its `;` becomes a comment (`--` at the end of input is one, as in MySQL),
    // trimming may shorten a name left unterminated at the end of the input, and an
    // executable comment may span a `;`.
    let exec = sql.contains("/*!") || sql.contains("/*M!");
    if let Some(first) = pieces.first().filter(|p| !p.ends_with("--") && !exec) {
        let kind = classify(first).kind;
        assert_eq!(discriminant(&kind), discriminant(&c.kind), "{sql:?}");
    }
    for piece in &pieces {
        assert!(!piece.is_empty());
        let sql_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c');
        assert_eq!(piece.trim_matches(sql_space), *piece);
        assert!(sql.contains(piece));
    }
    let assigned = assigned_user_variables(sql);
    let referenced = references_user_variables(sql);
    for name in &assigned {
        assert!(referenced.contains(name), "{sql:?}: {name}");
    }
    assert_eq!(c.flags.contains(Flags::USER_VAR_WRITE), !assigned.is_empty(), "{sql:?}");
    let _ = starts_with_keyword(sql, "SELECT");
}

#[test]
fn random_bytes_never_panic() {
    const INTERESTING: &[u8] = b"'\"`\\/*!+-#@;(),.?:=M\n 0x1bXB\xc3\xa9\xff";
    let mut rng = Rng(seed(0x9e37_79b9_7f4a_7c15));
    for _ in 0..iterations() {
        let len = rng.below(48);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(2) == 0 {
                    INTERESTING[rng.below(INTERESTING.len())]
                } else {
                    rng.next() as u8
                }
            })
            .collect();
        check(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn random_fragments_never_panic() {
    let mut rng = Rng(seed(0x1234_5678_9abc_def1));
    for _ in 0..iterations() {
        let n = rng.below(16);
        let sql: String = (0..n).map(|_| FRAGMENTS[rng.below(FRAGMENTS.len())]).collect();
        check(&sql);
    }
}

#[test]
fn truncations_of_real_statements_never_panic() {
    for sql in REAL {
        check(sql);
        for (i, _) in sql.char_indices() {
            check(&sql[..i]);
            check(&sql[i..]);
        }
    }
    let mut rng = Rng(seed(42));
    for _ in 0..iterations() / 4 {
        let a = REAL[rng.below(REAL.len())];
        let b = REAL[rng.below(REAL.len())];
        let cut_a = a
            .char_indices()
            .map(|(i, _)| i)
            .nth(rng.below(a.len()))
            .unwrap_or(a.len());
        let cut_b = b.char_indices().map(|(i, _)| i).nth(rng.below(b.len())).unwrap_or(0);
        check(&format!("{}{}", &a[..cut_a], &b[cut_b..]));
    }
}
