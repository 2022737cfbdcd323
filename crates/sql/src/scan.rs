//! The single-pass token walker behind [`crate::classify`] and the user-variable helpers.
//!
//! For each statement, [`detect`] reads the head on a cloned lexer, then the walker visits
//! every token once, collecting flags, route hints, user-variable reads and writes, and
//! whether the text is a pure SELECT.
//! Look-ahead is done by cloning the lexer, only for the few tokens that need it.

use crate::classify::{detect, Mode, RouteHint, SetKind, StatementKind};
use crate::flags::Flags;
use crate::keyword::Kw;
use crate::lexer::{Lexer, Token, TokenKind};
use crate::pure::Purity;
use crate::stored_calls::{Call, Callee};

/// What [`walk`] found in the whole text.
pub(crate) struct Outcome {
    /// Kind of the first non-empty statement.
    pub kind: Option<StatementKind>,
    pub flags: Flags,
    pub hint: Option<RouteHint>,
    /// No token broke the purity rule ([`Purity`]).
    pub pure: bool,
}

/// Walks every statement `lex` reads, calling `visit(token, is_write)` for each user variable.
pub(crate) fn walk<'a, V: FnMut(Token<'a>, bool)>(lex: Lexer<'a>, visit: V) -> Outcome {
    let mut w = Walker {
        lex,
        flags: Flags::EMPTY,
        primary: false,
        replica: false,
        purity: Purity::default(),
        callee: Callee::default(),
        visit,
    };
    let mut first = None;
    loop {
        let (kind, more) = w.statement();
        if let Some(kind) = kind {
            if kind.writes() {
                w.flags.insert(Flags::WRITES);
            }
            if kind.is_temporary_table() {
                w.flags.insert(Flags::TEMPORARY);
            }
            if first.is_none() {
                first = Some(kind);
            } else {
                w.flags.insert(Flags::MULTI_STATEMENT);
            }
        }
        if !more {
            break;
        }
    }
    let hint = match (w.primary, w.replica) {
        (true, _) => Some(RouteHint::Primary),
        (false, true) => Some(RouteHint::Replica),
        _ => None,
    };
    Outcome {
        kind: first,
        flags: w.flags,
        hint,
        pure: w.purity.is_pure(),
    }
}

struct Walker<'a, V> {
    lex: Lexer<'a>,
    flags: Flags,
    primary: bool,
    replica: bool,
    purity: Purity,
    callee: Callee<'a>,
    visit: V,
}

/// Per-statement state.
struct Stmt {
    mode: Mode,
    depth: u32,
    /// Kind of the previous significant token.
    prev: TokenKind,
    /// The next token is an assignment target (right after `SET` or a top-level comma in a
    /// `SET` list).
    expect_target: bool,
    /// Inside `INTO @a, @b`.
    into_list: bool,
    /// The last scope keyword of a `SET` list was GLOBAL/PERSIST/PERSIST_ONLY.
    sticky_global: bool,
    set_user: bool,
    set_session: bool,
    set_global: bool,
    /// `LOAD DATA`: still before the top-level `SET` clause.
    load_columns: bool,
    /// `SET STATEMENT .. FOR`: whether the inner statement writes, once its `FOR` was seen.
    inner_writes: Option<bool>,
    /// A `UNION`, `INTERSECT` or `EXCEPT` was seen (any depth).
    set_operation: bool,
    /// A `LIMIT` or `FETCH` was seen (any depth).
    limited: bool,
}

impl Stmt {
    fn new(mode: Mode) -> Self {
        Stmt {
            mode,
            depth: 0,
            prev: TokenKind::Semicolon,
            expect_target: false,
            into_list: false,
            sticky_global: false,
            set_user: false,
            set_session: false,
            set_global: false,
            load_columns: mode == Mode::LoadData,
            inner_writes: None,
            set_operation: false,
            limited: false,
        }
    }

    /// Records a `SET` list assignment to a system variable.
    fn assign_system(&mut self, global: bool) {
        if self.mode == Mode::SetList {
            if global {
                self.set_global = true;
            } else {
                self.set_session = true;
            }
        }
    }

    fn set_kind(&self) -> SetKind {
        match (self.set_global, self.set_user, self.set_session) {
            (true, _, _) => SetKind::Global,
            (false, true, true) => SetKind::Mixed,
            (false, true, false) => SetKind::UserVariablesOnly,
            (false, false, _) => SetKind::Session,
        }
    }
}

impl<'a, V: FnMut(Token<'a>, bool)> Walker<'a, V> {
    /// Walks one statement up to its `;` (consumed). Returns its kind (`None` if empty)
    /// and whether a `;` was found (more text may follow).
    fn statement(&mut self) -> (Option<StatementKind>, bool) {
        let (head, mode) = detect(self.lex.clone());
        let mut st = Stmt::new(mode);
        let mut more = false;
        while let Some(t) = self.lex.next() {
            match t.kind {
                TokenKind::Comment | TokenKind::HintComment => self.comment(t),
                TokenKind::Semicolon => {
                    self.purity.end_statement();
                    more = true;
                    break;
                }
                _ => self.token(&mut st, t),
            }
        }
        if st.set_operation && st.limited {
            self.flags.insert(Flags::PAGING);
        }
        if st.inner_writes == Some(true) || mode == Mode::ExecutingAnalyze {
            self.flags.insert(Flags::WRITES);
        }
        let kind = match head {
            StatementKind::Empty => None,
            StatementKind::Set(_) if mode == Mode::SetList => Some(StatementKind::Set(st.set_kind())),
            other => Some(other),
        };
        (kind, more)
    }

    fn comment(&mut self, t: Token<'a>) {
        match route_hint(t.text) {
            Some(RouteHint::Primary) => self.primary = true,
            Some(RouteHint::Replica) => self.replica = true,
            None => {}
        }
    }

    fn peek(&self) -> Option<Token<'a>> {
        self.lex.clone().next_significant()
    }

    fn token(&mut self, st: &mut Stmt, t: Token<'a>) {
        let target = std::mem::take(&mut st.expect_target);
        let into = std::mem::take(&mut st.into_list);
        let kw = t.kw();
        let call = self.callee.feed(&t, kw);
        self.purity.feed(&t, kw, call);
        if call == Some(Call::MaybeStored) {
            self.flags.insert(Flags::STORED_CALL);
        }
        match t.kind {
            TokenKind::LParen => st.depth += 1,
            TokenKind::RParen => st.depth = st.depth.saturating_sub(1),
            TokenKind::Comma => {
                st.into_list = into;
                st.expect_target = st.depth == 0 && st.mode == Mode::SetList;
            }
            TokenKind::Placeholder => self.flags.insert(Flags::HAS_PLACEHOLDER),
            TokenKind::UserVar => self.user_var(st, t, target, into),
            TokenKind::SystemVar => self.system_var(st, t, target),
            TokenKind::Word => self.word(st, kw, target),
            TokenKind::QuotedIdent if target => st.assign_system(st.sticky_global),
            _ => {}
        }
        st.prev = t.kind;
    }

    fn user_var(&mut self, st: &mut Stmt, t: Token<'a>, target: bool, into: bool) {
        let write = if target {
            st.set_user |= st.mode == Mode::SetList;
            true
        } else if into {
            st.into_list = true;
            true
        } else if st.load_columns && st.depth > 0 {
            true
        } else {
            let assigns = |op: &str| op == ":=" || (op == "=" && st.mode == Mode::GetDiagnostics);
            self.peek()
                .is_some_and(|n| n.kind == TokenKind::Operator && assigns(n.text))
        };
        self.flags.insert(if write {
            Flags::USER_VAR_WRITE
        } else {
            Flags::USER_VAR_READ
        });
        (self.visit)(t, write);
    }

    fn system_var(&mut self, st: &mut Stmt, t: Token<'a>, target: bool) {
        let (global, name) = split_system_var(t.text);
        if target {
            st.assign_system(global);
        }
        if name.eq_ignore_ascii_case("last_insert_id") || name.eq_ignore_ascii_case("identity") {
            self.flags.insert(Flags::LAST_INSERT_ID);
        }
        if name.eq_ignore_ascii_case("warning_count") || name.eq_ignore_ascii_case("error_count") {
            self.flags.insert(Flags::DIAGNOSTICS);
        }
        let tracking = name.len() > 14 && name.as_bytes()[..14].eq_ignore_ascii_case(b"session_track_");
        if tracking && !global && !target {
            self.flags.insert(Flags::SESSION_INFO);
        }
    }

    fn word(&mut self, st: &mut Stmt, kw: Kw, target: bool) {
        if target {
            match kw {
                Kw::Global | Kw::Persist | Kw::PersistOnly | Kw::Session | Kw::Local => {
                    st.sticky_global = !matches!(kw, Kw::Session | Kw::Local);
                    st.expect_target = true;
                    return;
                }
                Kw::Names | Kw::Character | Kw::Charset => st.assign_system(false),
                _ => st.assign_system(st.sticky_global),
            }
        }
        match kw {
            Kw::Set => {
                st.expect_target = true;
                if st.depth == 0 {
                    st.load_columns = false;
                }
            }
            Kw::Into => self.select_into(st),
            Kw::For => self.for_clause(st),
            Kw::Lock => self.lock_in_share_mode(),
            Kw::SqlCalcFoundRows => self.flags.insert(Flags::SQL_CALC_FOUND_ROWS),
            Kw::Limit => self.limit(st),
            Kw::Fetch => st.limited = true,
            Kw::Offset => self.flags.insert(Flags::PAGING),
            Kw::Union | Kw::Intersect | Kw::Except => st.set_operation = true,
            // `NEXTVAL(s)`, Oracle mode's `s.nextval` / `s.currval`, `NEXT VALUE FOR s`, ...
            Kw::Nextval | Kw::Setval | Kw::Lastval | Kw::Currval => self.flags.insert(Flags::SEQUENCE),
            Kw::Next | Kw::Previous if self.peek().is_some_and(|n| n.is_word("value")) => {
                self.flags.insert(Flags::SEQUENCE)
            }
            Kw::GetLock
            | Kw::ReleaseLock
            | Kw::ReleaseAllLocks
            | Kw::IsUsedLock
            | Kw::IsFreeLock
            | Kw::FoundRows
            | Kw::RowCount
            | Kw::LastInsertId
            | Kw::ConnectionId
            | Kw::User
            | Kw::SessionUser
            | Kw::SystemUser => self.function_call(st, kw),
            Kw::Processlist => self.flags.insert(Flags::PROCESSLIST),
            // CURRENT_USER may be written without parentheses.
            Kw::CurrentUser if st.prev != TokenKind::Dot => self.flags.insert(Flags::SESSION_INFO),
            _ => {}
        }
    }

    /// `INTO @var, ..` / `INTO OUTFILE` / `INTO DUMPFILE`.
    fn select_into(&mut self, st: &mut Stmt) {
        match self.peek() {
            Some(n) if n.kind == TokenKind::UserVar => {
                st.into_list = true;
                self.flags.insert(Flags::SELECT_INTO);
            }
            Some(n) if matches!(n.kw(), Kw::Outfile | Kw::Dumpfile) => {
                self.flags.insert(Flags::SELECT_INTO | Flags::WRITES);
            }
            _ => {}
        }
    }

    /// `LIMIT n, m` has an offset (`LIMIT m OFFSET n` is seen at its `OFFSET`).
    fn limit(&mut self, st: &mut Stmt) {
        st.limited = true;
        let mut p = self.lex.clone();
        p.next_significant();
        if p.next_significant().is_some_and(|t| t.kind == TokenKind::Comma) {
            self.flags.insert(Flags::PAGING);
        }
    }

    /// `FOR UPDATE` / `FOR SHARE`, or the `FOR` that ends MariaDB's `SET STATEMENT ..`.
    fn for_clause(&mut self, st: &mut Stmt) {
        if st.mode == Mode::SetStatementFor && st.inner_writes.is_none() && st.depth == 0 {
            let (inner, _) = detect(self.lex.clone());
            st.inner_writes = Some(inner.writes());
            return;
        }
        if matches!(self.peek().map(|t| t.kw()), Some(Kw::Update | Kw::Share)) {
            self.flags.insert(Flags::LOCKING_READ);
        }
    }

    fn lock_in_share_mode(&mut self) {
        let mut p = self.lex.clone();
        let kw = |t: Option<Token<'_>>| t.map_or(Kw::None, |t| t.kw());
        if kw(p.next_significant()) == Kw::In && kw(p.next_significant()) == Kw::Share {
            self.flags.insert(Flags::LOCKING_READ);
        }
    }

    /// Built-in function names count only when called: `name(`, not `db.name(`.
    fn function_call(&mut self, st: &Stmt, kw: Kw) {
        if st.prev == TokenKind::Dot {
            return;
        }
        let mut p = self.lex.clone();
        if p.next_significant().map(|t| t.kind) != Some(TokenKind::LParen) {
            return;
        }
        let flag = match kw {
            Kw::GetLock => Flags::GET_LOCK,
            Kw::ReleaseLock => Flags::RELEASE_LOCK,
            Kw::ReleaseAllLocks => Flags::RELEASE_ALL_LOCKS,
            Kw::IsUsedLock | Kw::IsFreeLock => Flags::IS_USED_LOCK,
            Kw::FoundRows => Flags::FOUND_ROWS,
            Kw::RowCount => Flags::ROW_COUNT,
            Kw::ConnectionId | Kw::User | Kw::SessionUser | Kw::SystemUser => Flags::SESSION_INFO,
            _ if p.next_significant().map(|t| t.kind) == Some(TokenKind::RParen) => Flags::LAST_INSERT_ID,
            _ => Flags::LAST_INSERT_ID_SET,
        };
        self.flags.insert(flag);
    }
}

/// Splits `@@scope.name` into (is global/persist scope, name).
fn split_system_var(text: &str) -> (bool, &str) {
    let body = text.strip_prefix("@@").unwrap_or(text);
    let Some((scope, name)) = body.split_once('.') else {
        return (false, body);
    };
    let global = ["global", "persist", "persist_only"]
        .iter()
        .any(|s| scope.eq_ignore_ascii_case(s));
    let known = global || scope.eq_ignore_ascii_case("session") || scope.eq_ignore_ascii_case("local");
    if known {
        (global, name)
    } else {
        (false, body)
    }
}

/// Routing hint carried by a block comment, if any.
pub(crate) fn route_hint(comment: &str) -> Option<RouteHint> {
    let body = comment.strip_prefix("/*")?;
    let body = body.strip_suffix("*/").unwrap_or(body);
    let body = body.strip_prefix('+').unwrap_or(body).trim();
    if body.eq_ignore_ascii_case("master") || contains_ignore_case(body, "tessera:primary") {
        Some(RouteHint::Primary)
    } else if body.eq_ignore_ascii_case("slave") || contains_ignore_case(body, "tessera:replica") {
        Some(RouteHint::Replica)
    } else {
        None
    }
}

fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_var_scopes() {
        assert_eq!(split_system_var("@@x"), (false, "x"));
        assert_eq!(split_system_var("@@session.x"), (false, "x"));
        assert_eq!(split_system_var("@@LOCAL.x"), (false, "x"));
        assert_eq!(split_system_var("@@GLOBAL.x"), (true, "x"));
        assert_eq!(split_system_var("@@persist.x"), (true, "x"));
        assert_eq!(split_system_var("@@Persist_Only.x"), (true, "x"));
        assert_eq!(
            split_system_var("@@default.key_buffer_size"),
            (false, "default.key_buffer_size")
        );
    }

    #[test]
    fn hints() {
        assert_eq!(route_hint("/*master*/"), Some(RouteHint::Primary));
        assert_eq!(route_hint("/* Master */"), Some(RouteHint::Primary));
        assert_eq!(route_hint("/*+ tessera:primary */"), Some(RouteHint::Primary));
        assert_eq!(route_hint("/* tessera:PRIMARY */"), Some(RouteHint::Primary));
        assert_eq!(route_hint("/*slave*/"), Some(RouteHint::Replica));
        assert_eq!(
            route_hint("/*+ SET_VAR(x=1) tessera:replica */"),
            Some(RouteHint::Replica)
        );
        assert_eq!(route_hint("/*+ tessera:replica"), Some(RouteHint::Replica));
        assert_eq!(route_hint("/* masters */"), None);
        assert_eq!(route_hint("-- master"), None);
        assert_eq!(route_hint("/**/"), None);
        assert_eq!(route_hint("/*"), None);
    }

    #[test]
    fn visitor_sees_reads_and_writes() {
        let mut seen = Vec::new();
        walk(Lexer::new("SET @a = @b; SELECT @c := 1 INTO @d"), |t, w| {
            seen.push((t.text, w))
        });
        assert_eq!(seen, vec![("@a", true), ("@b", false), ("@c", true), ("@d", true)]);
    }
}
