//! Statement classification: what kind of statement this is, its side-effect flags and routing hints.
//!
//! The kind comes from the first non-empty statement; flags and hints cover the whole text
//! (every statement of a multi-statement query), so a caller never misses a side effect.

use crate::flags::Flags;
use crate::keyword::Kw;
use crate::lexer::{unquote, Lexer, Token, TokenKind};
use crate::scan::walk;

/// Result of [`classify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub kind: StatementKind,
    pub flags: Flags,
    pub hint: Option<RouteHint>,
    /// One SELECT, headed by the word `SELECT`, that calls only built-in functions reading
    /// nothing but their arguments and the tables, names no variable, and neither locks,
    /// writes nor touches a sequence (`crate::pure`): it may share a backend connection with
    /// other sessions' statements.
    pub pure_select: bool,
}

/// Routing hint found in a comment: `/*+ tessera:primary */`, `/*master*/` -> `Primary`;
/// `/*+ tessera:replica */`, `/*slave*/` -> `Replica`. `Primary` wins when both appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteHint {
    Primary,
    Replica,
}

/// What a `SET` statement changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetKind {
    /// Session variables only (`SET x=1`, `SET SESSION x=1`, `@@x`, `@@session.x`, `SET NAMES`).
    Session,
    /// At least one `GLOBAL`/`PERSIST`/`PERSIST_ONLY` assignment, or `SET GLOBAL TRANSACTION`.
    Global,
    /// Only `@user` variables.
    UserVariablesOnly,
    /// Both user variables and session variables.
    Mixed,
    /// `SET TRANSACTION ...`: next transaction only.
    TransactionNext,
    /// `SET SESSION|LOCAL TRANSACTION ...`.
    TransactionSession,
    /// `SET PASSWORD ...`.
    Password,
    /// `SET ROLE ...`, `SET DEFAULT ROLE ...`.
    Role,
    /// MariaDB `SET STATEMENT x=1 FOR <stmt>`.
    StatementFor,
}

/// Kind of a statement, decided by its first significant keyword(s).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    Replace,
    Set(SetKind),
    Use(String),
    Begin,
    StartTransactionReadOnly,
    Commit,
    Rollback,
    Savepoint,
    LockTables,
    UnlockTables,
    CreateTemporaryTable(String),
    DropTemporaryTable(Vec<String>),
    DropTable(Vec<String>),
    Ddl,
    Show,
    Describe,
    Call,
    Prepare,
    Execute,
    Deallocate,
    Xa,
    Kill {
        query: bool,
        id: Option<u64>,
    },
    LoadData {
        local: bool,
    },
    Handler,
    Do,
    Flush,
    Analyze,
    /// Reads the diagnostics area: `SHOW WARNINGS|ERRORS`, `SHOW COUNT(*) WARNINGS|ERRORS`,
    /// `GET [CURRENT|STACKED] DIAGNOSTICS`.
    Diagnostics,
    Other,
    Empty,
}

impl StatementKind {
    /// Whether statements of this kind may write data or schema (sets [`Flags::WRITES`]).
    pub fn writes(&self) -> bool {
        use StatementKind as S;
        matches!(
            self,
            S::Insert
                | S::Update
                | S::Delete
                | S::Replace
                | S::Ddl
                | S::LoadData { .. }
                | S::Call
                | S::CreateTemporaryTable(_)
                | S::DropTemporaryTable(_)
                | S::DropTable(_)
        )
    }

    /// Whether it creates or drops a temporary table (sets [`Flags::TEMPORARY`]).
    pub fn is_temporary_table(&self) -> bool {
        matches!(
            self,
            StatementKind::CreateTemporaryTable(_) | StatementKind::DropTemporaryTable(_)
        )
    }
}

/// Classifies a query (one statement, or several separated by `;`), its strings read with
/// backslash escapes (the default `sql_mode`).
pub fn classify(sql: &str) -> Classification {
    classify_with(sql, true)
}

/// [`classify`] with strings read as the session's `sql_mode` says: with backslash escapes,
/// or (`backslash_escapes` false) as `NO_BACKSLASH_ESCAPES` reads them.
pub fn classify_with(sql: &str, backslash_escapes: bool) -> Classification {
    let outcome = walk(Lexer::with_backslash_escapes(sql, backslash_escapes), |_, _| {});
    let kind = outcome.kind.unwrap_or(StatementKind::Empty);
    let mut flags = outcome.flags;
    if kind != StatementKind::Select {
        flags.remove(Flags::SEQUENCE);
    }
    Classification {
        pure_select: kind == StatementKind::Select && outcome.pure,
        kind,
        flags,
        hint: outcome.hint,
    }
}

/// Extra work the token walker must do for a statement, decided from its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Plain,
    /// `SET` assignment list: the final [`SetKind`] depends on the targets.
    SetList,
    /// MariaDB `SET STATEMENT .. FOR <stmt>`.
    SetStatementFor,
    /// `LOAD DATA`: `@vars` in the column list are assigned.
    LoadData,
    /// MariaDB `ANALYZE <dml>` / `EXPLAIN ANALYZE <dml>`: runs the statement, so it writes.
    ExecutingAnalyze,
    /// `GET DIAGNOSTICS`: `@var = <item>` assigns the variable (a condition number given as
    /// `@var` is read).
    GetDiagnostics,
}

fn next_kw(lx: &mut Lexer<'_>) -> Kw {
    lx.next_significant().map_or(Kw::None, |t| t.kw())
}

/// Decides the kind of the statement that starts at `lx`, reading ahead as little as possible.
pub(crate) fn detect(mut lx: Lexer<'_>) -> (StatementKind, Mode) {
    use StatementKind as S;
    let mut first = lx.next_significant();
    let mut parens = false;
    while first.is_some_and(|t| t.kind == TokenKind::LParen) {
        parens = true;
        first = lx.next_significant();
    }
    let first = match first {
        Some(t) if t.kind != TokenKind::Semicolon => t,
        _ if parens => return (S::Other, Mode::Plain),
        _ => return (S::Empty, Mode::Plain),
    };
    let kind = match first.kw() {
        Kw::Select | Kw::Values | Kw::Table => S::Select,
        Kw::With => detect_with(lx),
        Kw::Insert => S::Insert,
        Kw::Update => S::Update,
        Kw::Delete => S::Delete,
        Kw::Replace => S::Replace,
        Kw::Set => return detect_set(lx),
        Kw::Load => return detect_load(lx),
        Kw::Use => detect_use(lx),
        Kw::Begin if next_kw(&mut lx) == Kw::Not => S::Other, // MariaDB BEGIN NOT ATOMIC
        Kw::Begin => S::Begin,
        Kw::Start if next_kw(&mut lx) == Kw::Transaction => detect_start_transaction(lx),
        Kw::Commit => S::Commit,
        Kw::Rollback => detect_rollback(lx),
        Kw::Savepoint => S::Savepoint,
        Kw::Release if next_kw(&mut lx) == Kw::Savepoint => S::Savepoint,
        Kw::Lock if matches!(next_kw(&mut lx), Kw::Table | Kw::Tables) => S::LockTables,
        Kw::Unlock if matches!(next_kw(&mut lx), Kw::Table | Kw::Tables) => S::UnlockTables,
        Kw::Create => detect_create(lx),
        Kw::Drop => detect_drop(lx),
        Kw::Alter | Kw::Truncate | Kw::Rename => S::Ddl,
        Kw::Show => detect_show(lx),
        Kw::Get if matches!(next_kw(&mut lx), Kw::Diagnostics | Kw::Current | Kw::Stacked) => {
            return (S::Diagnostics, Mode::GetDiagnostics);
        }
        Kw::Desc | Kw::Describe | Kw::Explain if next_kw(&mut lx) == Kw::Analyze => {
            return (S::Describe, analyze_mode(lx));
        }
        Kw::Desc | Kw::Describe | Kw::Explain => S::Describe,
        Kw::Call => S::Call,
        Kw::Prepare => S::Prepare,
        Kw::Execute => S::Execute,
        Kw::Deallocate => S::Deallocate,
        Kw::Xa => S::Xa,
        Kw::Kill => detect_kill(lx),
        Kw::Handler => S::Handler,
        Kw::Do => S::Do,
        Kw::Flush => S::Flush,
        Kw::Analyze => return (S::Analyze, analyze_mode(lx)),
        _ => S::Other,
    };
    (kind, Mode::Plain)
}

/// `SHOW WARNINGS`, `SHOW ERRORS` and `SHOW COUNT(*) WARNINGS|ERRORS` read the diagnostics area.
fn detect_show(mut lx: Lexer<'_>) -> StatementKind {
    match lx.next_significant() {
        Some(t) if matches!(t.kw(), Kw::Warnings | Kw::Errors) => StatementKind::Diagnostics,
        Some(t) if t.text.eq_ignore_ascii_case("count") => StatementKind::Diagnostics,
        _ => StatementKind::Show,
    }
}

/// `WITH [RECURSIVE] cte AS (..), .. <main statement>`: the first keyword at depth 0
/// that starts a statement decides; `.. ) (SELECT ..)` is a parenthesized query.
fn detect_with(mut lx: Lexer<'_>) -> StatementKind {
    use StatementKind as S;
    let mut depth = 0u32;
    let mut after_close = false;
    while let Some(t) = lx.next_significant() {
        match t.kind {
            TokenKind::Semicolon => break,
            TokenKind::LParen if depth == 0 && after_close => return S::Select,
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            TokenKind::Word if depth == 0 => match t.kw() {
                Kw::Select | Kw::Values | Kw::Table => return S::Select,
                Kw::Insert => return S::Insert,
                Kw::Update => return S::Update,
                Kw::Delete => return S::Delete,
                Kw::Replace => return S::Replace,
                _ => {}
            },
            _ => {}
        }
        after_close = t.kind == TokenKind::RParen && depth == 0;
    }
    S::Select
}

fn detect_set(mut lx: Lexer<'_>) -> (StatementKind, Mode) {
    let set = |k| (StatementKind::Set(k), Mode::Plain);
    match next_kw(&mut lx) {
        Kw::Transaction => set(SetKind::TransactionNext),
        Kw::Session | Kw::Local if next_kw(&mut lx) == Kw::Transaction => set(SetKind::TransactionSession),
        Kw::Global if next_kw(&mut lx) == Kw::Transaction => set(SetKind::Global),
        Kw::Password => set(SetKind::Password),
        Kw::Role => set(SetKind::Role),
        Kw::Default if next_kw(&mut lx) == Kw::Role => set(SetKind::Role),
        Kw::Statement => (StatementKind::Set(SetKind::StatementFor), Mode::SetStatementFor),
        _ => (StatementKind::Set(SetKind::Session), Mode::SetList),
    }
}

/// After `ANALYZE` (or `EXPLAIN ANALYZE`): `[FORMAT = x] INSERT|UPDATE|DELETE|REPLACE ..`
/// executes the statement.
fn analyze_mode(mut lx: Lexer<'_>) -> Mode {
    let mut kw = next_kw(&mut lx);
    if kw == Kw::Format {
        lx.next_significant(); // =
        lx.next_significant(); // JSON / TREE / TRADITIONAL
        kw = next_kw(&mut lx);
    }
    if matches!(kw, Kw::Insert | Kw::Update | Kw::Delete | Kw::Replace) {
        Mode::ExecutingAnalyze
    } else {
        Mode::Plain
    }
}

/// `LOAD DATA|XML [LOW_PRIORITY|CONCURRENT] [LOCAL] INFILE ..`; other `LOAD ..` is `Other`.
fn detect_load(mut lx: Lexer<'_>) -> (StatementKind, Mode) {
    if !matches!(next_kw(&mut lx), Kw::Data | Kw::Xml) {
        return (StatementKind::Other, Mode::Plain);
    }
    let mut local = false;
    loop {
        match next_kw(&mut lx) {
            Kw::LowPriority | Kw::Concurrent => {}
            Kw::Local => local = true,
            _ => break,
        }
    }
    (StatementKind::LoadData { local }, Mode::LoadData)
}

fn detect_use(mut lx: Lexer<'_>) -> StatementKind {
    match lx.next_significant() {
        Some(t) if is_ident(&t) => StatementKind::Use(unquote(t.text).into_owned()),
        _ => StatementKind::Other,
    }
}

/// `START TRANSACTION [WITH CONSISTENT SNAPSHOT | READ WRITE | READ ONLY], ..`.
fn detect_start_transaction(mut lx: Lexer<'_>) -> StatementKind {
    let mut after_read = false;
    while let Some(t) = lx.next_significant() {
        if t.kind == TokenKind::Semicolon {
            break;
        }
        let kw = t.kw();
        if after_read && kw == Kw::Only {
            return StatementKind::StartTransactionReadOnly;
        }
        after_read = kw == Kw::Read;
    }
    StatementKind::Begin
}

/// `ROLLBACK [WORK] TO [SAVEPOINT] x` is a savepoint operation; other forms end the transaction.
fn detect_rollback(mut lx: Lexer<'_>) -> StatementKind {
    let mut kw = next_kw(&mut lx);
    if kw == Kw::Work {
        kw = next_kw(&mut lx);
    }
    if kw == Kw::To {
        StatementKind::Savepoint
    } else {
        StatementKind::Rollback
    }
}

/// `CREATE [OR REPLACE] TEMPORARY TABLE [IF NOT EXISTS] [db.]name ..`; other `CREATE` is `Ddl`.
fn detect_create(mut lx: Lexer<'_>) -> StatementKind {
    let mut kw = next_kw(&mut lx);
    if kw == Kw::Or {
        if next_kw(&mut lx) != Kw::Replace {
            return StatementKind::Ddl;
        }
        kw = next_kw(&mut lx);
    }
    if kw != Kw::Temporary || next_kw(&mut lx) != Kw::Table {
        return StatementKind::Ddl;
    }
    skip_if_exists(&mut lx);
    match table_name(&mut lx) {
        Some(name) => StatementKind::CreateTemporaryTable(name),
        None => StatementKind::Ddl,
    }
}

/// `DROP [TEMPORARY] TABLE[S] [IF EXISTS] a, db.b ..`, `DROP PREPARE`; other `DROP` is `Ddl`.
fn detect_drop(mut lx: Lexer<'_>) -> StatementKind {
    let mut kw = next_kw(&mut lx);
    if kw == Kw::Prepare {
        return StatementKind::Deallocate;
    }
    let temporary = kw == Kw::Temporary;
    if temporary {
        kw = next_kw(&mut lx);
    }
    if !matches!(kw, Kw::Table | Kw::Tables) {
        return StatementKind::Ddl;
    }
    skip_if_exists(&mut lx);
    let mut names = Vec::new();
    while let Some(name) = table_name(&mut lx) {
        names.push(name);
        if lx.next_significant().map(|t| t.kind) != Some(TokenKind::Comma) {
            break;
        }
    }
    if temporary {
        StatementKind::DropTemporaryTable(names)
    } else {
        StatementKind::DropTable(names)
    }
}

/// `KILL [HARD|SOFT] [CONNECTION|QUERY] n`. MariaDB `KILL QUERY ID n` names a query id,
/// not a connection id, and `KILL USER u` names a user: both give `id: None`.
fn detect_kill(mut lx: Lexer<'_>) -> StatementKind {
    let kw = |t: Option<Token<'_>>| t.map_or(Kw::None, |t| t.kw());
    let mut t = lx.next_significant();
    if matches!(kw(t), Kw::Hard | Kw::Soft) {
        t = lx.next_significant();
    }
    let mut query = false;
    match kw(t) {
        Kw::Connection => t = lx.next_significant(),
        Kw::Query => {
            query = true;
            t = lx.next_significant();
            if kw(t) == Kw::Id {
                return StatementKind::Kill { query, id: None };
            }
        }
        _ => {}
    }
    let id = t
        .filter(|t| t.kind == TokenKind::Number)
        .and_then(|t| t.text.parse::<u64>().ok());
    // `KILL 4000000000 - 1`: an expression, evaluated by the caller.
    let alone = lx.next_significant().is_none_or(|t| t.kind == TokenKind::Semicolon);
    StatementKind::Kill {
        query,
        id: id.filter(|_| alone),
    }
}

fn is_ident(t: &Token<'_>) -> bool {
    matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
}

/// Consumes `IF [NOT] EXISTS` if it comes next.
fn skip_if_exists(lx: &mut Lexer<'_>) {
    let mut p = lx.clone();
    if next_kw(&mut p) != Kw::If {
        return;
    }
    let mut kw = next_kw(&mut p);
    if kw == Kw::Not {
        kw = next_kw(&mut p);
    }
    if kw == Kw::Exists {
        *lx = p;
    }
}

/// Reads `name`, `db.name`, `` `db`.`name` `` and returns the last part, unquoted.
fn table_name(lx: &mut Lexer<'_>) -> Option<String> {
    let mut last = lx.next_significant().filter(is_ident)?;
    loop {
        let mut p = lx.clone();
        if p.next_significant().map(|t| t.kind) != Some(TokenKind::Dot) {
            break;
        }
        match p.next_significant().filter(is_ident) {
            Some(t) => last = t,
            None => break,
        }
        *lx = p;
    }
    Some(unquote(last.text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use StatementKind as S;

    #[test]
    fn no_backslash_escapes_sees_what_follows_a_string_ending_in_a_backslash() {
        let locking = r"SELECT 'a\' FROM t WHERE id = 1 FOR UPDATE";
        assert!(classify_with(locking, false).flags.contains(Flags::LOCKING_READ));
        assert!(!classify_with(locking, false).pure_select);
        let multi = r"SELECT 'a\'; DELETE FROM t";
        let c = classify_with(multi, false);
        assert!(c.flags.contains(Flags::MULTI_STATEMENT) && c.flags.contains(Flags::WRITES));
        assert!(
            !classify(multi).flags.contains(Flags::WRITES),
            "read with escapes: one string"
        );
        let plain = classify_with(r"SELECT 'a\' FROM t", false);
        assert!(plain.pure_select && plain.kind == S::Select);
    }

    fn kind(sql: &str) -> StatementKind {
        classify(sql).kind
    }

    fn flags(sql: &str) -> Flags {
        classify(sql).flags
    }

    fn has(sql: &str, f: Flags) -> bool {
        flags(sql).contains(f)
    }

    fn set(sql: &str) -> SetKind {
        match kind(sql) {
            S::Set(k) => k,
            other => panic!("{sql}: expected SET, got {other:?}"),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn selects() {
        for sql in [
            "SELECT 1",
            "select c from sbtest1 where id=?",
            "  \n\tSeLeCt 1",
            "(SELECT 1) UNION (SELECT 2)",
            "((select 1))",
            "VALUES ROW(1, 2)",
            "TABLE t",
            "WITH t AS (SELECT 1) SELECT * FROM t",
            "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r",
            "WITH a AS (SELECT 1), b AS (SELECT 2) (SELECT * FROM a)",
            "-- comment\nSELECT 1",
            "# comment\nSELECT 1",
            "/* c */ SELECT 1",
            "/*+ tessera:primary */ SELECT 1",
            "SELECT /*!40001 SQL_NO_CACHE */ * FROM t",
            "/*!SELECT*/ 1",
        ] {
            assert_eq!(kind(sql), S::Select, "{sql}");
        }
    }

    #[test]
    fn dml() {
        assert_eq!(kind("INSERT INTO t VALUES (1)"), S::Insert);
        assert_eq!(kind("insert ignore into t select * from u"), S::Insert);
        assert_eq!(kind("REPLACE INTO t VALUES (1)"), S::Replace);
        assert_eq!(kind("UPDATE t SET a=1"), S::Update);
        assert_eq!(kind("DELETE FROM t"), S::Delete);
        assert_eq!(kind("WITH c AS (SELECT 1) UPDATE t, c SET t.a = 1"), S::Update);
        assert_eq!(
            kind("WITH c AS (SELECT id FROM u) DELETE FROM t WHERE id IN (SELECT id FROM c)"),
            S::Delete
        );
        assert_eq!(kind("WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c"), S::Insert);
        for sql in [
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a=1",
            "DELETE FROM t",
            "REPLACE t SET a=1",
        ] {
            assert!(has(sql, Flags::WRITES), "{sql}");
        }
        assert!(!has("SELECT 1", Flags::WRITES));
        assert!(has("WITH c AS (SELECT 1) DELETE FROM t", Flags::WRITES));
    }

    #[test]
    fn sysbench_statements() {
        let cases = [
            ("SELECT c FROM sbtest1 WHERE id=?", S::Select),
            ("SELECT c FROM sbtest3 WHERE id=5017", S::Select),
            ("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", S::Select),
            ("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", S::Select),
            ("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", S::Select),
            (
                "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
                S::Select,
            ),
            ("UPDATE sbtest1 SET k=k+1 WHERE id=?", S::Update),
            ("UPDATE sbtest6 SET c='71276633393-34-9' WHERE id=4985", S::Update),
            ("DELETE FROM sbtest1 WHERE id=?", S::Delete),
            ("INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", S::Insert),
            ("BEGIN", S::Begin),
            ("COMMIT", S::Commit),
        ];
        for (sql, expected) in cases {
            let c = classify(sql);
            assert_eq!(c.kind, expected, "{sql}");
            assert_eq!(c.hint, None);
            assert_eq!(c.flags.contains(Flags::HAS_PLACEHOLDER), sql.contains('?'), "{sql}");
            assert!(!c
                .flags
                .intersects(Flags::USER_VAR_READ | Flags::USER_VAR_WRITE | Flags::LOCKING_READ));
        }
        assert_eq!(flags("SELECT c FROM sbtest1 WHERE id=?"), Flags::HAS_PLACEHOLDER);
    }

    #[test]
    fn tpcc_statements() {
        let c = classify("SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE");
        assert_eq!(c.kind, S::Select);
        assert_eq!(c.flags, Flags::LOCKING_READ | Flags::HAS_PLACEHOLDER);
        let c = classify(
            "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
             WHERE w_id = 1 AND c_w_id = w_id AND c_d_id = 3 AND c_id = 42",
        );
        assert_eq!((c.kind, c.flags), (S::Select, Flags::EMPTY));
        assert!(has(
            "SELECT s_quantity, s_data FROM stock WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE",
            Flags::LOCKING_READ
        ));
        assert!(has(
            "SELECT no_o_id FROM new_orders WHERE no_d_id = 1 ORDER BY no_o_id ASC LIMIT 1 LOCK IN SHARE MODE",
            Flags::LOCKING_READ
        ));
        assert_eq!(
            kind("UPDATE district SET d_next_o_id = ? + 1 WHERE d_id = ? AND d_w_id = ?"),
            S::Update
        );
        assert_eq!(
            kind("INSERT INTO orders (o_id, o_d_id, o_w_id) VALUES (?, ?, ?)"),
            S::Insert
        );
        assert_eq!(
            kind("DELETE FROM new_orders WHERE no_o_id = ? AND no_d_id = ? AND no_w_id = ?"),
            S::Delete
        );
        assert_eq!(
            kind("SELECT COUNT(DISTINCT (s_i_id)) FROM order_line, stock WHERE ol_w_id = ?"),
            S::Select
        );
    }

    #[test]
    fn locking_reads() {
        for sql in [
            "SELECT * FROM t FOR UPDATE",
            "select * from t for share",
            "SELECT * FROM t FOR UPDATE NOWAIT",
            "SELECT * FROM t FOR SHARE SKIP LOCKED",
            "SELECT * FROM t FOR UPDATE OF t",
            "SELECT * FROM t LOCK IN SHARE MODE",
            "SELECT * FROM (SELECT * FROM t FOR UPDATE) x",
            "INSERT INTO u SELECT * FROM t FOR UPDATE",
            "SELECT 1 FOR /* c */ UPDATE",
        ] {
            assert!(has(sql, Flags::LOCKING_READ), "{sql}");
        }
        for sql in [
            "SELECT 'FOR UPDATE'",
            "SELECT `for update`",
            "SELECT 1 -- FOR UPDATE",
            "SELECT 1 /* LOCK IN SHARE MODE */",
            "SELECT 1 # FOR SHARE",
            "UPDATE t SET a = 1",
            "LOCK TABLES t READ",
        ] {
            assert!(!has(sql, Flags::LOCKING_READ), "{sql}");
        }
    }

    #[test]
    fn lock_functions() {
        let c = classify("SELECT GET_LOCK('a', 1)");
        assert_eq!(c.kind, S::Select);
        assert_eq!(c.flags, Flags::GET_LOCK);
        assert!(has("select get_lock ('a', 1)", Flags::GET_LOCK));
        assert!(has("DO RELEASE_LOCK('a')", Flags::RELEASE_LOCK));
        assert_eq!(kind("DO RELEASE_LOCK('a')"), S::Do);
        assert!(has("SELECT RELEASE_ALL_LOCKS()", Flags::RELEASE_ALL_LOCKS));
        assert!(has("SELECT IS_USED_LOCK('a')", Flags::IS_USED_LOCK));
        assert!(has("SELECT IS_FREE_LOCK('a')", Flags::IS_USED_LOCK));
        assert!(!has("SELECT 'GET_LOCK(1)'", Flags::GET_LOCK));
        assert!(!has("SELECT get_lock FROM t", Flags::GET_LOCK));
        assert!(!has("SELECT mydb.get_lock('a')", Flags::GET_LOCK));
        assert!(!has("SELECT `GET_LOCK`('a')", Flags::GET_LOCK));
    }

    #[test]
    fn session_info_and_diagnostics() {
        for sql in [
            "SELECT CONNECTION_ID()",
            "select user(), 1",
            "SELECT CURRENT_USER",
            "SELECT current_user()",
            "SELECT SESSION_USER(), SYSTEM_USER()",
            "SELECT @@session_track_system_variables",
            "SELECT @@session.session_track_schema",
        ] {
            assert!(has(sql, Flags::SESSION_INFO), "{sql}");
        }
        for sql in [
            "SELECT user FROM mysql.user",
            "SELECT 'USER()'",
            "SELECT @@global.session_track_schema",
            "CREATE USER x",
            "SELECT db.connection_id()",
        ] {
            assert!(!has(sql, Flags::SESSION_INFO), "{sql}");
        }
        assert_eq!(
            flags("GET DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT"),
            Flags::USER_VAR_WRITE
        );
        assert_eq!(
            flags("GET DIAGNOSTICS CONDITION @i @c = MYSQL_ERRNO"),
            Flags::USER_VAR_WRITE | Flags::USER_VAR_READ
        );
        assert_eq!(
            crate::assigned_user_variables("get current diagnostics condition 1 @C = MYSQL_ERRNO, @`m` = MESSAGE_TEXT"),
            ["c", "m"]
        );
        for sql in [
            "SHOW WARNINGS",
            "show errors limit 1",
            "SHOW COUNT(*) WARNINGS",
            "GET DIAGNOSTICS @n = NUMBER",
            "get current diagnostics condition 1 @c = MYSQL_ERRNO",
        ] {
            assert_eq!(kind(sql), S::Diagnostics, "{sql}");
        }
        assert_eq!(kind("SHOW TABLES"), S::Show);
        assert!(has("SELECT @@warning_count", Flags::DIAGNOSTICS));
        assert!(has("SELECT @@session.error_count, 1", Flags::DIAGNOSTICS));
        assert!(!has("SELECT warning_count FROM t", Flags::DIAGNOSTICS));
    }

    #[test]
    fn found_rows_and_friends() {
        assert!(has(
            "SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1",
            Flags::SQL_CALC_FOUND_ROWS
        ));
        assert!(has("SELECT FOUND_ROWS()", Flags::FOUND_ROWS));
        assert!(has("SELECT NEXTVAL(s)", Flags::SEQUENCE));
        assert!(has("select previous value for s", Flags::SEQUENCE));
        assert!(!has("SELECT c FROM sbtest1 WHERE id = ?", Flags::SEQUENCE));
        assert!(!has("SELECT interval_val FROM t", Flags::SEQUENCE));
        assert!(has("SELECT SetVal(s, 10)", Flags::SEQUENCE));
        assert!(has("SELECT a FROM t WHERE b = 'x' OR c = lastVAL", Flags::SEQUENCE));
        assert!(has("SELECT NEXT VALUE FOR s", Flags::SEQUENCE));
        assert!(has("SELECT s.nextval, s.CURRVAL FROM dual", Flags::SEQUENCE));
        assert!(has("SELECT /*!100300 NEXTVAL(s) */", Flags::SEQUENCE));
        assert!(!has("SELECT nextva FROM t", Flags::SEQUENCE));
        assert!(!has("SELECT 'nextval(s)', a FROM t /* nextval(s) */", Flags::SEQUENCE));
        assert!(!has("SELECT a FROM t WHERE v = 'vAl'", Flags::SEQUENCE));
        assert!(!has("SELECT next_id FROM t ORDER BY previous", Flags::SEQUENCE));
        assert!(!has("INSERT INTO t VALUES (NEXTVAL(s))", Flags::SEQUENCE));
        assert!(has("SELECT ROW_COUNT()", Flags::ROW_COUNT));
        assert_eq!(flags("SELECT LAST_INSERT_ID()"), Flags::LAST_INSERT_ID);
        assert_eq!(flags("SELECT last_insert_id( /* x */ )"), Flags::LAST_INSERT_ID);
        assert!(has(
            "UPDATE seq SET id = LAST_INSERT_ID(id + 1)",
            Flags::LAST_INSERT_ID_SET
        ));
        assert!(!has(
            "UPDATE seq SET id = LAST_INSERT_ID(id + 1)",
            Flags::LAST_INSERT_ID
        ));
        assert!(has("SELECT @@last_insert_id", Flags::LAST_INSERT_ID));
        assert!(has("SELECT @@IDENTITY", Flags::LAST_INSERT_ID));
        assert_eq!(flags("SELECT 'found_rows()'"), Flags::EMPTY);
    }

    #[test]
    fn select_into() {
        let c = classify("SELECT a, b INTO @x, @y FROM t");
        assert_eq!(c.kind, S::Select);
        assert_eq!(c.flags, Flags::SELECT_INTO | Flags::USER_VAR_WRITE);
        assert!(has("SELECT a FROM t INTO @x", Flags::SELECT_INTO));
        assert_eq!(
            flags("SELECT * FROM t INTO OUTFILE '/tmp/x'"),
            Flags::SELECT_INTO | Flags::WRITES
        );
        assert!(has("SELECT * INTO DUMPFILE '/tmp/x' FROM t", Flags::WRITES));
        assert!(!has("INSERT INTO t VALUES (@a)", Flags::SELECT_INTO));
        assert!(!has("SELECT 'INTO @x'", Flags::SELECT_INTO));
    }

    #[test]
    fn user_variables() {
        assert_eq!(flags("SELECT @a"), Flags::USER_VAR_READ);
        assert_eq!(flags("SELECT \"@a\""), Flags::EMPTY);
        assert_eq!(flags("SELECT '@a'"), Flags::EMPTY);
        assert_eq!(flags("SELECT @a := 1"), Flags::USER_VAR_WRITE);
        assert_eq!(
            flags("SELECT @a := @a + 1"),
            Flags::USER_VAR_WRITE | Flags::USER_VAR_READ
        );
        assert_eq!(flags("SELECT * FROM t WHERE a = @a"), Flags::USER_VAR_READ);
        assert_eq!(flags("SELECT * FROM t WHERE @a = 1"), Flags::USER_VAR_READ);
        assert_eq!(flags("SELECT @@session.autocommit"), Flags::EMPTY);
        assert_eq!(flags("EXECUTE s USING @a, @b"), Flags::USER_VAR_READ);
        assert_eq!(
            flags("CREATE USER 'bob'@'localhost'") & Flags::USER_VAR_READ,
            Flags::EMPTY
        );
        assert!(!has("GRANT ALL ON *.* TO bob@localhost", Flags::USER_VAR_READ));
    }

    #[test]
    fn set_session_and_global() {
        assert_eq!(set("SET autocommit=0"), SetKind::Session);
        assert_eq!(set("set @@session.time_zone='+00:00'"), SetKind::Session);
        assert_eq!(set("SET @@autocommit = 1"), SetKind::Session);
        assert_eq!(set("SET SESSION sql_mode = ''"), SetKind::Session);
        assert_eq!(set("SET LOCAL sql_mode = ''"), SetKind::Session);
        assert_eq!(set("SET NAMES utf8mb4 COLLATE utf8mb4_0900_ai_ci"), SetKind::Session);
        assert_eq!(set("SET CHARACTER SET utf8"), SetKind::Session);
        assert_eq!(set("SET CHARSET 'utf8'"), SetKind::Session);
        assert_eq!(set("SET `sql_mode` = 'ANSI'"), SetKind::Session);
        assert_eq!(set("SET @@global.x=1"), SetKind::Global);
        assert_eq!(set("SET GLOBAL max_connections = 10"), SetKind::Global);
        assert_eq!(set("SET PERSIST max_connections = 10"), SetKind::Global);
        assert_eq!(set("SET PERSIST_ONLY back_log = 10"), SetKind::Global);
        assert_eq!(set("SET @@persist.x = 1"), SetKind::Global);
        assert_eq!(set("SET GLOBAL a = 1, b = 2"), SetKind::Global);
        assert_eq!(set("SET a = 1, GLOBAL b = 2"), SetKind::Global);
        assert_eq!(set("SET GLOBAL a = 1, SESSION b = 2"), SetKind::Global);
        assert!(!has("SET GLOBAL x = 1", Flags::WRITES));
    }

    #[test]
    fn set_user_variables() {
        assert_eq!(set("SET @a = 1"), SetKind::UserVariablesOnly);
        assert_eq!(set("SET @a := 1, @`b` = 2"), SetKind::UserVariablesOnly);
        assert_eq!(set("SET sql_mode='', @a=1"), SetKind::Mixed);
        assert_eq!(set("SET @a = 1, SESSION x = 2"), SetKind::Mixed);
        assert_eq!(set("SET @a = @@session.x"), SetKind::UserVariablesOnly);
        assert_eq!(
            set("SET @a = (SELECT x FROM t WHERE y = 1), @b = 2"),
            SetKind::UserVariablesOnly
        );
        assert_eq!(set("SET @a = IF(1, 2, 3), @b = @a"), SetKind::UserVariablesOnly);
        assert_eq!(flags("SET @a = 1"), Flags::USER_VAR_WRITE);
        assert_eq!(flags("SET @a = @b"), Flags::USER_VAR_WRITE | Flags::USER_VAR_READ);
        assert_eq!(flags("SET x = @b"), Flags::USER_VAR_READ);
    }

    #[test]
    fn set_special_forms() {
        assert_eq!(
            set("SET TRANSACTION ISOLATION LEVEL READ COMMITTED"),
            SetKind::TransactionNext
        );
        assert_eq!(set("SET TRANSACTION READ ONLY"), SetKind::TransactionNext);
        assert_eq!(
            set("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            SetKind::TransactionSession
        );
        assert_eq!(set("SET LOCAL TRANSACTION READ WRITE"), SetKind::TransactionSession);
        assert_eq!(
            set("SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED"),
            SetKind::Global
        );
        assert_eq!(set("SET PASSWORD = 'x'"), SetKind::Password);
        assert_eq!(set("SET PASSWORD FOR 'bob'@'%' = PASSWORD('x')"), SetKind::Password);
        assert_eq!(set("SET ROLE ALL"), SetKind::Role);
        assert_eq!(set("SET DEFAULT ROLE r TO 'u'@'h'"), SetKind::Role);
        assert_eq!(
            set("SET STATEMENT max_statement_time=1 FOR SELECT * FROM t"),
            SetKind::StatementFor
        );
    }

    #[test]
    fn set_statement_for_inner_statement() {
        let c = classify("SET STATEMENT max_statement_time=60 FOR UPDATE t SET a = 1");
        assert_eq!(c.kind, S::Set(SetKind::StatementFor));
        assert!(c.flags.contains(Flags::WRITES));
        assert!(!c.flags.contains(Flags::LOCKING_READ));
        let c = classify("SET STATEMENT a=1, b=2 FOR SELECT * FROM t FOR UPDATE");
        assert_eq!(c.flags, Flags::LOCKING_READ);
    }

    #[test]
    fn executable_comments() {
        assert_eq!(set("/*!40101 SET NAMES utf8mb4 */"), SetKind::Session);
        assert_eq!(
            set("/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;"),
            SetKind::UserVariablesOnly
        );
        assert_eq!(
            set("/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */"),
            SetKind::Mixed
        );
        assert_eq!(set("/*!40103 SET TIME_ZONE='+00:00' */"), SetKind::Session);
        assert_eq!(
            set("/*M!100101 SET STATEMENT x=1 FOR */ SELECT 1"),
            SetKind::StatementFor
        );
        assert_eq!(kind("/*!50003 CREATE*/ /*!50020 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET @x = 1 */"), S::Ddl);
        assert_eq!(kind("/*!50001 DROP VIEW IF EXISTS `v`*/"), S::Ddl);
        assert_eq!(kind("/*!40000 ALTER TABLE `t` DISABLE KEYS */"), S::Ddl);
    }

    #[test]
    fn route_hints() {
        let c = classify("/*+ tessera:primary */ SELECT 1");
        assert_eq!((c.kind, c.hint), (S::Select, Some(RouteHint::Primary)));
        assert_eq!(classify("SELECT /*master*/ 1").hint, Some(RouteHint::Primary));
        assert_eq!(classify("SELECT /* MASTER */ 1").hint, Some(RouteHint::Primary));
        assert_eq!(classify("SELECT 1 /*slave*/").hint, Some(RouteHint::Replica));
        assert_eq!(
            classify("SELECT /*+ BKA(t) TESSERA:REPLICA */ 1").hint,
            Some(RouteHint::Replica)
        );
        assert_eq!(classify("/*slave*/ SELECT /*master*/ 1").hint, Some(RouteHint::Primary));
        assert_eq!(classify("SELECT '/*master*/'").hint, None);
        assert_eq!(classify("SELECT 1 -- master").hint, None);
        assert_eq!(classify("SELECT /* the master table */ 1").hint, None);
        assert_eq!(classify("SELECT /*+ MAX_EXECUTION_TIME(10) */ 1").hint, None);
        assert_eq!(classify("/*master*/").kind, S::Empty);
    }

    #[test]
    fn use_statements() {
        assert_eq!(kind("USE db1"), S::Use("db1".into()));
        assert_eq!(kind("use `My DB`;"), S::Use("My DB".into()));
        assert_eq!(kind("USE `a``b`"), S::Use("a`b".into()));
        assert_eq!(kind("USE"), S::Other);
    }

    #[test]
    fn transactions() {
        assert_eq!(kind("BEGIN"), S::Begin);
        assert_eq!(kind("begin work"), S::Begin);
        assert_eq!(kind("START TRANSACTION"), S::Begin);
        assert_eq!(kind("START TRANSACTION READ WRITE"), S::Begin);
        assert_eq!(kind("START TRANSACTION WITH CONSISTENT SNAPSHOT"), S::Begin);
        assert_eq!(kind("START TRANSACTION READ ONLY"), S::StartTransactionReadOnly);
        assert_eq!(
            kind("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"),
            S::StartTransactionReadOnly
        );
        assert_eq!(kind("START SLAVE"), S::Other);
        assert_eq!(kind("BEGIN NOT ATOMIC SELECT 1; END"), S::Other);
        assert_eq!(kind("COMMIT"), S::Commit);
        assert_eq!(kind("COMMIT WORK AND NO CHAIN NO RELEASE"), S::Commit);
        assert_eq!(kind("ROLLBACK"), S::Rollback);
        assert_eq!(kind("ROLLBACK WORK AND CHAIN"), S::Rollback);
        assert_eq!(kind("ROLLBACK TO SAVEPOINT s1"), S::Savepoint);
        assert_eq!(kind("ROLLBACK WORK TO s1"), S::Savepoint);
        assert_eq!(kind("SAVEPOINT s1"), S::Savepoint);
        assert_eq!(kind("RELEASE SAVEPOINT s1"), S::Savepoint);
        assert_eq!(kind("XA START 'x'"), S::Xa);
        assert_eq!(kind("xa commit 'x' one phase"), S::Xa);
    }

    #[test]
    fn table_locks() {
        assert_eq!(kind("LOCK TABLES t READ, u WRITE"), S::LockTables);
        assert_eq!(kind("lock table t write"), S::LockTables);
        assert_eq!(kind("UNLOCK TABLES"), S::UnlockTables);
        assert_eq!(kind("unlock table"), S::UnlockTables);
        assert_eq!(kind("LOCK INSTANCE FOR BACKUP"), S::Other);
    }

    #[test]
    fn temporary_tables() {
        let c = classify("CREATE TEMPORARY TABLE t2 SELECT * FROM t1");
        assert_eq!(c.kind, S::CreateTemporaryTable("t2".into()));
        assert!(c.flags.contains(Flags::TEMPORARY | Flags::WRITES));
        assert_eq!(
            kind("create temporary table if not exists db.`Tmp` (id int)"),
            S::CreateTemporaryTable("Tmp".into())
        );
        assert_eq!(
            kind("CREATE OR REPLACE TEMPORARY TABLE `a``b` LIKE t"),
            S::CreateTemporaryTable("a`b".into())
        );
        assert_eq!(
            kind("CREATE TEMPORARY TABLE `db`.`x`(a int)"),
            S::CreateTemporaryTable("x".into())
        );
        let c = classify("DROP TEMPORARY TABLE IF EXISTS a, db.b, `c`");
        assert_eq!(c.kind, S::DropTemporaryTable(names(&["a", "b", "c"])));
        assert!(c.flags.contains(Flags::TEMPORARY));
        let c = classify("DROP TABLE IF EXISTS t1, T2 CASCADE");
        assert_eq!(c.kind, S::DropTable(names(&["t1", "T2"])));
        assert!(!c.flags.contains(Flags::TEMPORARY));
        assert!(c.flags.contains(Flags::WRITES));
        assert_eq!(kind("DROP TABLES t"), S::DropTable(names(&["t"])));
        assert_eq!(kind("CREATE TABLE t (id int)"), S::Ddl);
        assert_eq!(kind("CREATE TEMPORARY SEQUENCE s"), S::Ddl);
    }

    #[test]
    fn ddl() {
        for sql in [
            "CREATE TABLE t2 SELECT * FROM t1",
            "ALTER TABLE t ADD COLUMN c INT",
            "DROP DATABASE d",
            "DROP VIEW v",
            "TRUNCATE TABLE t",
            "RENAME TABLE a TO b",
            "CREATE INDEX i ON t (c)",
            "CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN SELECT 1; END",
        ] {
            assert_eq!(kind(sql), S::Ddl, "{sql}");
            assert!(has(sql, Flags::WRITES), "{sql}");
        }
    }

    #[test]
    fn admin_statements() {
        assert_eq!(kind("SHOW VARIABLES LIKE 'x'"), S::Show);
        assert_eq!(kind("DESC t"), S::Describe);
        assert_eq!(kind("DESCRIBE t"), S::Describe);
        assert_eq!(kind("EXPLAIN SELECT 1"), S::Describe);
        assert_eq!(kind("CALL p(1)"), S::Call);
        assert!(has("CALL p(1)", Flags::WRITES));
        assert_eq!(kind("PREPARE s FROM 'SELECT ?'"), S::Prepare);
        assert!(!has("PREPARE s FROM 'SELECT ?'", Flags::HAS_PLACEHOLDER));
        assert_eq!(kind("EXECUTE s USING @a"), S::Execute);
        assert_eq!(kind("DEALLOCATE PREPARE s"), S::Deallocate);
        assert_eq!(kind("DROP PREPARE s"), S::Deallocate);
        assert_eq!(kind("HANDLER t OPEN"), S::Handler);
        assert_eq!(kind("DO SLEEP(1)"), S::Do);
        assert_eq!(kind("FLUSH TABLES"), S::Flush);
        assert_eq!(kind("ANALYZE TABLE t"), S::Analyze);
        assert!(!has("ANALYZE TABLE t", Flags::WRITES));
        assert!(!has("EXPLAIN UPDATE t SET a = 1", Flags::WRITES));
        assert!(!has("EXPLAIN ANALYZE SELECT 1", Flags::WRITES));
        assert_eq!(kind("ANALYZE UPDATE t SET a = 1"), S::Analyze);
        assert!(has("ANALYZE UPDATE t SET a = 1", Flags::WRITES));
        assert!(has("ANALYZE FORMAT=JSON DELETE FROM t", Flags::WRITES));
        assert_eq!(kind("EXPLAIN ANALYZE DELETE FROM t"), S::Describe);
        assert!(has("EXPLAIN ANALYZE DELETE FROM t", Flags::WRITES));
        assert_eq!(kind("GRANT SELECT ON *.* TO u"), S::Other);
        assert_eq!(kind("CHECK TABLE t"), S::Other);
        assert_eq!(kind("LOAD INDEX INTO CACHE t"), S::Other);
        assert_eq!(kind("'SELECT'"), S::Other);
    }

    #[test]
    fn kill() {
        assert_eq!(
            kind("KILL 42"),
            S::Kill {
                query: false,
                id: Some(42)
            }
        );
        assert_eq!(
            kind("KILL QUERY 42"),
            S::Kill {
                query: true,
                id: Some(42)
            }
        );
        assert_eq!(
            kind("kill connection 7"),
            S::Kill {
                query: false,
                id: Some(7)
            }
        );
        assert_eq!(
            kind("KILL HARD QUERY 9"),
            S::Kill {
                query: true,
                id: Some(9)
            }
        );
        assert_eq!(
            kind("KILL SOFT CONNECTION 9"),
            S::Kill {
                query: false,
                id: Some(9)
            }
        );
        assert_eq!(kind("KILL QUERY ID 9"), S::Kill { query: true, id: None });
        assert_eq!(kind("KILL USER bob"), S::Kill { query: false, id: None });
        assert_eq!(kind("KILL ?"), S::Kill { query: false, id: None });
        assert_eq!(kind("KILL 99999999999999999999999"), S::Kill { query: false, id: None });
    }

    #[test]
    fn load_data() {
        let c = classify("LOAD DATA LOCAL INFILE 'f' INTO TABLE t");
        assert_eq!(c.kind, S::LoadData { local: true });
        assert!(c.flags.contains(Flags::WRITES));
        assert!(!c.flags.contains(Flags::SELECT_INTO));
        assert_eq!(kind("LOAD DATA INFILE '/x' INTO TABLE t"), S::LoadData { local: false });
        assert_eq!(
            kind("load data low_priority local infile 'f' into table t"),
            S::LoadData { local: true }
        );
        assert_eq!(
            kind("LOAD XML LOCAL INFILE 'f' INTO TABLE t"),
            S::LoadData { local: true }
        );
        assert_eq!(
            flags("LOAD DATA INFILE 'f' INTO TABLE t (a, @b) SET c = @b * 2"),
            Flags::WRITES | Flags::USER_VAR_WRITE | Flags::USER_VAR_READ
        );
    }

    #[test]
    fn empty_and_multi_statements() {
        for sql in ["", "   ", "-- x", "/* x */", ";", " ; ; ", "# a\n# b"] {
            assert_eq!(kind(sql), S::Empty, "{sql:?}");
            assert_eq!(flags(sql), Flags::EMPTY, "{sql:?}");
        }
        assert_eq!(flags("SELECT 1;"), Flags::EMPTY);
        assert_eq!(flags("SELECT 1; -- done"), Flags::EMPTY);
        assert_eq!(kind(";;SELECT 1"), S::Select);
        let c = classify("SELECT 1; SET @a = 1");
        assert_eq!(c.kind, S::Select);
        assert_eq!(c.flags, Flags::MULTI_STATEMENT | Flags::USER_VAR_WRITE);
        let c = classify("SELECT ';'; UPDATE t SET a = 1");
        assert_eq!(c.flags, Flags::MULTI_STATEMENT | Flags::WRITES);
        assert!(!has("SELECT 'a;b'", Flags::MULTI_STATEMENT));
        assert!(!has("SELECT `a;b`", Flags::MULTI_STATEMENT));
        assert!(!has("SELECT 1 /* ; SELECT 2 */", Flags::MULTI_STATEMENT));
        assert!(has("SELECT 1; /*!SELECT 2*/", Flags::MULTI_STATEMENT));
        assert_eq!(kind("("), S::Other);
    }

    #[test]
    fn connector_statements() {
        let c = classify(
            "/* mysql-connector-java-8.0.33 (Revision: 7d6b0800528b6b25c68b52dc10d6c1c8429c100c) */\
             SELECT  @@session.auto_increment_increment AS auto_increment_increment, \
             @@character_set_client AS character_set_client, @@license AS license",
        );
        assert_eq!((c.kind, c.flags, c.hint), (S::Select, Flags::EMPTY, None));
        assert_eq!(set("SET character_set_results = NULL"), SetKind::Session);
        assert_eq!(set("SET @@session.autocommit = OFF"), SetKind::Session);
        assert_eq!(kind("SELECT @@session.transaction_read_only"), S::Select);
    }
}
