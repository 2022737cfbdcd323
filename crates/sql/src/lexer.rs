//! A zero-allocation MySQL/MariaDB tokenizer that slices the input without copying it.
//!
//! The lexer never panics and always makes progress, whatever the input. Executable
//! comments (`/*! ... */`, `/*!50110 ... */`, MariaDB `/*M! ... */`, `/*M!100101 ... */`)
//! are transparent: their markers produce no token and their content is lexed as code.
//! Ordinary comments and optimizer hints (`/*+ ... */`) are returned as
//! [`TokenKind::Comment`] / [`TokenKind::HintComment`] so callers can inspect them;
//! [`Lexer::next_significant`] skips them.
//!
//! Assumptions: backslash escapes are active in strings (no `NO_BACKSLASH_ESCAPES`) and
//! `"..."` is a string, not an identifier (no `ANSI_QUOTES`).

use std::borrow::Cow;

use crate::keyword::Kw;

/// What a [`Token`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// Unquoted identifier or keyword (`SELECT`, `sbtest1`, `1abc`).
    Word,
    /// Backquoted identifier, quotes included (`` `a``b` ``).
    QuotedIdent,
    /// `'...'` or `"..."` string literal, quotes included.
    String,
    /// Decimal number (`42`, `1.5e-3`).
    Number,
    /// `X'0A'` or `0x0A`.
    HexLiteral,
    /// `b'01'` or `0b01`.
    BitLiteral,
    /// `?` placeholder.
    Placeholder,
    /// User variable: `@name`, `@'quoted'`, `@"quoted"`, `` @`quoted` ``.
    UserVar,
    /// System variable: `@@name`, `@@session.name`, `@@global.name`, ...
    SystemVar,
    /// Any operator or other punctuation (`=`, `:=`, `<=>`, `*`, the `@` of `user@host`).
    Operator,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `,`
    Comma,
    /// `.`
    Dot,
    /// `;`
    Semicolon,
    /// `-- ...`, `# ...` or `/* ... */`.
    Comment,
    /// Optimizer hint `/*+ ... */`.
    HintComment,
}

/// One token: its kind, its exact source text and the byte offset where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    pub offset: usize,
}

impl<'a> Token<'a> {
    /// True for an unquoted word equal to `kw`, ASCII case-insensitively.
    pub fn is_word(&self, kw: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(kw)
    }

    /// False for comments and hints, true for everything else.
    pub fn is_significant(&self) -> bool {
        !matches!(self.kind, TokenKind::Comment | TokenKind::HintComment)
    }

    /// Byte offset just past the token.
    pub fn end(&self) -> usize {
        self.offset + self.text.len()
    }

    pub(crate) fn kw(&self) -> Kw {
        if self.kind == TokenKind::Word {
            Kw::lookup(self.text)
        } else {
            Kw::None
        }
    }
}

/// Streaming tokenizer over a `&str`. Cheap to clone, which is how callers look ahead.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    in_exec_comment: bool,
    /// Kind, start and end of the last significant token (for `user@host`).
    prev: Option<(TokenKind, usize, usize)>,
    /// A backslash in a string escapes the next character (off under the `sql_mode`
    /// `NO_BACKSLASH_ESCAPES`, where it is itself and only a doubled quote escapes).
    backslash_escapes: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer that reads strings as the default `sql_mode` does (backslash escapes).
    pub fn new(src: &'a str) -> Self {
        Self::with_backslash_escapes(src, true)
    }

    /// A lexer that reads strings with backslash escapes or, when `backslash_escapes` is
    /// false, as `NO_BACKSLASH_ESCAPES` does.
    pub fn with_backslash_escapes(src: &'a str, backslash_escapes: bool) -> Self {
        Lexer {
            src,
            pos: 0,
            in_exec_comment: false,
            prev: None,
            backslash_escapes,
        }
    }

    /// Byte offset of the next unread byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next token that is not a comment or hint.
    pub fn next_significant(&mut self) -> Option<Token<'a>> {
        self.find(Token::is_significant)
    }

    fn byte(&self, i: usize) -> u8 {
        self.src.as_bytes().get(i).copied().unwrap_or(0)
    }

    fn token(&mut self, kind: TokenKind, start: usize, end: usize) -> Token<'a> {
        self.pos = end;
        if !matches!(kind, TokenKind::Comment | TokenKind::HintComment) {
            self.prev = Some((kind, start, end));
        }
        Token {
            kind,
            text: &self.src[start..end],
            offset: start,
        }
    }

    /// Skips whitespace and executable-comment markers. Returns false at end of input.
    fn skip_trivia(&mut self) -> bool {
        let bytes = self.src.as_bytes();
        loop {
            while self.pos < bytes.len() && is_space(bytes[self.pos]) {
                self.pos += 1;
            }
            let Some(&b0) = bytes.get(self.pos) else {
                return false;
            };
            if b0 != b'/' && b0 != b'*' {
                return true;
            }
            let (b1, b2) = (self.byte(self.pos + 1), self.byte(self.pos + 2));
            if b0 == b'/' && b1 == b'*' && b2 == b'!' {
                self.enter_exec_comment(self.pos + 3);
            } else if b0 == b'/' && b1 == b'*' && b2 == b'M' && self.byte(self.pos + 3) == b'!' {
                self.enter_exec_comment(self.pos + 4);
            } else if b0 == b'*' && b1 == b'/' && self.in_exec_comment {
                self.pos += 2;
                self.in_exec_comment = false;
            } else {
                return true;
            }
        }
    }

    /// Skips an executable comment's optional version number (5 or 6 digits).
    fn enter_exec_comment(&mut self, mut pos: usize) {
        let limit = pos + 6;
        while pos < limit && self.byte(pos).is_ascii_digit() {
            pos += 1;
        }
        self.pos = pos;
        self.in_exec_comment = true;
    }

    fn lex_token(&mut self) -> Token<'a> {
        use TokenKind as K;
        let start = self.pos;
        let (b0, b1) = (self.byte(start), self.byte(start + 1));
        match b0 {
            b'\'' | b'"' | b'`' => {
                let end = quoted_end(self.src.as_bytes(), start, self.backslash_escapes);
                let kind = if b0 == b'`' { K::QuotedIdent } else { K::String };
                self.token(kind, start, end)
            }
            b'/' if b1 == b'*' => self.block_comment(start),
            b'-' if b1 == b'-' && is_dash_comment_end(self.byte(start + 2)) => self.line_comment(start),
            b'#' => self.line_comment(start),
            b'?' => self.token(K::Placeholder, start, start + 1),
            b'@' => self.at_sign(start),
            b'(' => self.token(K::LParen, start, start + 1),
            b')' => self.token(K::RParen, start, start + 1),
            b',' => self.token(K::Comma, start, start + 1),
            b'.' => self.token(K::Dot, start, start + 1),
            b';' => self.token(K::Semicolon, start, start + 1),
            b'0'..=b'9' => self.number_or_word(start),
            b'x' | b'X' if b1 == b'\'' => self.prefixed_literal(start, K::HexLiteral),
            b'b' | b'B' if b1 == b'\'' => self.prefixed_literal(start, K::BitLiteral),
            _ if is_ident_byte(b0) => {
                let end = self.ident_end(start);
                self.token(K::Word, start, end)
            }
            _ => self.operator(start),
        }
    }

    fn block_comment(&mut self, start: usize) -> Token<'a> {
        let kind = if self.byte(start + 2) == b'+' {
            TokenKind::HintComment
        } else {
            TokenKind::Comment
        };
        let end = match self.src[start + 2..].find("*/") {
            Some(i) => start + 2 + i + 2,
            None => self.src.len(),
        };
        self.token(kind, start, end)
    }

    fn line_comment(&mut self, start: usize) -> Token<'a> {
        let end = match self.src[start..].find('\n') {
            Some(i) => start + i,
            None => self.src.len(),
        };
        self.token(TokenKind::Comment, start, end)
    }

    fn ident_end(&self, pos: usize) -> usize {
        let rest = self.src.as_bytes().get(pos..).unwrap_or_default();
        rest.iter()
            .position(|&b| !is_ident_byte(b))
            .map_or(pos + rest.len(), |i| pos + i)
    }

    fn digits_end(&self, mut pos: usize, pred: fn(u8) -> bool) -> usize {
        while pred(self.byte(pos)) {
            pos += 1;
        }
        pos
    }

    /// `X'..'` / `b'..'`: the quoted part has no escapes.
    fn prefixed_literal(&mut self, start: usize, kind: TokenKind) -> Token<'a> {
        let end = match self.src[start + 2..].find('\'') {
            Some(i) => start + 2 + i + 1,
            None => self.src.len(),
        };
        self.token(kind, start, end)
    }

    /// Numbers, `0x..`/`0b..` literals, and identifiers that start with a digit (`1abc`).
    fn number_or_word(&mut self, start: usize) -> Token<'a> {
        let (b1, b2) = (self.byte(start + 1), self.byte(start + 2));
        if self.byte(start) == b'0' && matches!(b1, b'x' | b'b') {
            let (pred, kind): (fn(u8) -> bool, _) = if b1 == b'x' {
                (|b: u8| b.is_ascii_hexdigit(), TokenKind::HexLiteral)
            } else {
                (|b: u8| b == b'0' || b == b'1', TokenKind::BitLiteral)
            };
            if pred(b2) {
                let end = self.digits_end(start + 2, pred);
                if !is_ident_byte(self.byte(end)) {
                    return self.token(kind, start, end);
                }
            }
        }
        let mut end = self.digits_end(start, |b| b.is_ascii_digit());
        let mut plain_integer = true;
        if self.byte(end) == b'.' {
            end = self.digits_end(end + 1, |b| b.is_ascii_digit());
            plain_integer = false;
        }
        if matches!(self.byte(end), b'e' | b'E') {
            let sign = usize::from(matches!(self.byte(end + 1), b'+' | b'-'));
            if self.byte(end + 1 + sign).is_ascii_digit() {
                end = self.digits_end(end + 1 + sign, |b| b.is_ascii_digit());
                plain_integer = false;
            }
        }
        if plain_integer && is_ident_byte(self.byte(end)) {
            let end = self.ident_end(end);
            return self.token(TokenKind::Word, start, end);
        }
        self.token(TokenKind::Number, start, end)
    }

    /// `@user`, `@'user'`, `@@system`, or the bare `@` of `'user'@'host'`.
    fn at_sign(&mut self, start: usize) -> Token<'a> {
        let b1 = self.byte(start + 1);
        if b1 == b'@' {
            let end = self.system_var_end(start + 2);
            if end > start + 2 {
                return self.token(TokenKind::SystemVar, start, end);
            }
            return self.token(TokenKind::Operator, start, start + 2);
        }
        if self.is_host_separator(start) {
            return self.token(TokenKind::Operator, start, start + 1);
        }
        if matches!(b1, b'\'' | b'"' | b'`') {
            let end = quoted_end(self.src.as_bytes(), start + 1, self.backslash_escapes);
            return self.token(TokenKind::UserVar, start, end);
        }
        let mut end = start + 1;
        while is_ident_byte(self.byte(end)) || self.byte(end) == b'.' {
            end += 1;
        }
        if end > start + 1 {
            return self.token(TokenKind::UserVar, start, end);
        }
        self.token(TokenKind::Operator, start, start + 1)
    }

    /// End of `session.name`, `` `name` ``, `global.`x`` ... after `@@`.
    fn system_var_end(&self, mut pos: usize) -> usize {
        let start = pos;
        loop {
            let b = self.byte(pos);
            if is_ident_byte(b) {
                pos = self.ident_end(pos);
            } else if b == b'`' {
                pos = quoted_end(self.src.as_bytes(), pos, self.backslash_escapes);
            } else if b == b'.' && pos > start {
                let next = self.byte(pos + 1);
                if !(is_ident_byte(next) || next == b'`') {
                    return pos;
                }
                pos += 1;
            } else {
                return pos;
            }
        }
    }

    /// Whether the `@` at `at` separates a user name from a host (`'u'@'h'`, `u@h`)
    /// rather than starting a user variable.
    fn is_host_separator(&self, at: usize) -> bool {
        match self.prev {
            Some((TokenKind::String | TokenKind::QuotedIdent, _, _)) => true,
            Some((TokenKind::Word, start, end)) => end == at && !word_precedes_expression(&self.src[start..end]),
            _ => false,
        }
    }

    fn operator(&mut self, start: usize) -> Token<'a> {
        const LONG: [&str; 12] = ["<=>", "->>", ":=", "<=", ">=", "<>", "!=", "||", "&&", "<<", ">>", "->"];
        let rest = &self.src.as_bytes()[start..];
        let len = LONG
            .iter()
            .find(|op| rest.starts_with(op.as_bytes()))
            .map_or(1, |op| op.len());
        self.token(TokenKind::Operator, start, start + len)
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if !self.skip_trivia() {
            return None;
        }
        Some(self.lex_token())
    }
}

/// ASCII whitespace as MySQL sees it.
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `--` starts a comment only when followed by whitespace, a control character or the end.
fn is_dash_comment_end(b: u8) -> bool {
    b == 0 || is_space(b) || b.is_ascii_control()
}

/// Bytes that may appear in an unquoted identifier; every non-ASCII byte qualifies, so
/// token boundaries always fall on ASCII bytes (and therefore on char boundaries).
fn is_ident_byte(b: u8) -> bool {
    IDENT_BYTES[usize::from(b)]
}

/// [`is_ident_byte`] as a table: one load per byte in the lexer's hottest loop.
const IDENT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        i += 1;
    }
    table
};

/// End (exclusive) of the quoted token starting at `start`; the input end if unterminated.
/// A backslash escapes the next byte in strings when `backslash_escapes`, never in identifiers.
pub fn quoted_end(bytes: &[u8], start: usize, backslash_escapes: bool) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' && backslash_escapes && quote != b'`' {
            i += 2;
        } else if b == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// Reserved words after which `@x` is a variable even without whitespace (`SELECT@a`).
fn word_precedes_expression(word: &str) -> bool {
    const WORDS: [&str; 30] = [
        "SELECT", "SET", "INTO", "WHERE", "AND", "OR", "NOT", "XOR", "ON", "BY", "THEN", "ELSE", "WHEN", "CASE",
        "RETURN", "LIKE", "IS", "IN", "LIMIT", "HAVING", "DIV", "MOD", "USING", "VALUES", "VALUE", "DO", "INTERVAL",
        "DISTINCT", "REGEXP", "BETWEEN",
    ];
    WORDS.iter().any(|w| w.eq_ignore_ascii_case(word))
}

/// Removes quotes from a quoted identifier or string and resolves its escapes
/// (doubled quotes; backslash escapes in strings). Unquoted text is returned as is.
pub fn unquote(text: &str) -> Cow<'_, str> {
    unquote_as(text, true)
}

/// [`unquote`] as a session reads strings: `backslash_escapes` false is `NO_BACKSLASH_ESCAPES`,
/// where a backslash in a string is itself and only doubled quotes are resolved.
pub fn unquote_as(text: &str, backslash_escapes: bool) -> Cow<'_, str> {
    let Some(quote) = text.chars().next().filter(|c| matches!(c, '\'' | '"' | '`')) else {
        return Cow::Borrowed(text);
    };
    let escapes = backslash_escapes && quote != '`';
    let inner = &text[1..];
    let escaped = escapes && ends_with_escape(inner);
    let inner = if !inner.is_empty() && inner.ends_with(quote) && !escaped {
        &inner[..inner.len() - 1]
    } else {
        inner
    };
    if !inner.contains(quote) && (!escapes || !inner.contains('\\')) {
        return Cow::Borrowed(inner);
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == quote {
            out.push(c);
            chars.next(); // the doubled quote
        } else if c == '\\' && escapes {
            if let Some(e) = chars.next() {
                out.push(unescape(e));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether the last char of `s` (a closing quote candidate) is itself escaped by a backslash.
fn ends_with_escape(s: &str) -> bool {
    let Some((_, body)) = s.as_bytes().split_last() else {
        return false;
    };
    body.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

fn unescape(c: char) -> char {
    match c {
        '0' => '\0',
        'b' => '\u{8}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'Z' => '\u{1a}',
        other => other,
    }
}

/// How the two ways of reading strings (with backslash escapes, the server's default, and
/// `NO_BACKSLASH_ESCAPES`) compare on one statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EscapeReading {
    /// No string holds a backslash: both read the same tokens and the same values.
    Alike,
    /// The same tokens, but a string holds a backslash, so its value differs (`'a\nb'`).
    ValuesDiffer,
    /// A backslash before a quote ends a string in one mode and not in the other (`'a\'`).
    TokensDiffer,
}

/// How `sql` reads under `NO_BACKSLASH_ESCAPES` compared with the default mode.
pub fn escape_reading(sql: &str) -> EscapeReading {
    if !sql.contains('\\') {
        return EscapeReading::Alike;
    }
    let mut default = Lexer::new(sql);
    let mut reading = EscapeReading::Alike;
    for t in Lexer::with_backslash_escapes(sql, false) {
        let same = default
            .next()
            .is_some_and(|d| d.kind == t.kind && d.offset == t.offset && d.text == t.text);
        // The same text can still end differently: `'a\'` at the end is unterminated by default.
        let escaped_end = t.kind == TokenKind::String && ends_with_escape(&t.text[1..]);
        if !same || escaped_end {
            return EscapeReading::TokensDiffer;
        }
        if matches!(t.kind, TokenKind::String | TokenKind::UserVar) && t.text.contains('\\') {
            reading = EscapeReading::ValuesDiffer;
        }
    }
    if default.next().is_some() {
        return EscapeReading::TokensDiffer;
    }
    reading
}

/// Whether `sql` begins, after whitespace and comments, with the keyword `kw`
/// (ASCII case-insensitive). `kw` may hold several words: `"START TRANSACTION"`.
pub fn starts_with_keyword(sql: &str, kw: &str) -> bool {
    let mut lexer = Lexer::new(sql);
    let mut words = kw.split_ascii_whitespace().peekable();
    if words.peek().is_none() {
        return false;
    }
    words.all(|w| lexer.next_significant().is_some_and(|t| t.is_word(w)))
}

/// Whether the statement is exactly one of `forms`, each a space-separated list of unquoted
/// words, compared without regard to case (comments and one trailing `;` aside, no hints):
/// `is_plain_words("Begin WORK;", &["begin", "begin work"])`. Allocates nothing.
pub fn is_plain_words(sql: &str, forms: &[&str]) -> bool {
    forms.iter().any(|form| matches_words(sql, form))
}

fn matches_words(sql: &str, form: &str) -> bool {
    let mut want = form.split_ascii_whitespace();
    let mut ended = false;
    for token in Lexer::new(sql) {
        match token.kind {
            TokenKind::Comment => {}
            TokenKind::Word if !ended => {
                if !want.next().is_some_and(|w| token.text.eq_ignore_ascii_case(w)) {
                    return false;
                }
            }
            TokenKind::Semicolon if !ended => ended = true,
            _ => return false,
        }
    }
    want.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind as K;

    #[test]
    fn the_two_modes_read_backslashes_apart() {
        assert_eq!(escape_reading("SELECT 'a' FROM t WHERE k = 1"), EscapeReading::Alike);
        assert_eq!(escape_reading(r"SELECT 1 /* \ */"), EscapeReading::Alike);
        assert_eq!(escape_reading(r"SELECT 'a\nb', 1"), EscapeReading::ValuesDiffer);
        assert_eq!(escape_reading(r"SELECT 'a\' , 'b'"), EscapeReading::TokensDiffer);
        assert_eq!(escape_reading(r"SELECT 'a\'"), EscapeReading::TokensDiffer);
        assert_eq!(unquote_as(r"'a\nb'", false), r"a\nb");
        assert_eq!(unquote_as(r"'a\'", false), r"a\");
        assert_eq!(unquote_as(r"'it''s\'", false), r"it's\");
        assert_eq!(unquote_as(r"'a\nb'", true), "a\nb");
    }

    #[test]
    fn plain_words_are_only_words() {
        assert!(is_plain_words(" Begin  WORK ; ", &["begin", "begin work"]));
        assert!(is_plain_words("/* c */ COMMIT", &["commit"]));
        assert!(is_plain_words("COMMIT AND CHAIN", &["commit and chain"]));
        assert!(!is_plain_words("COMMIT AND CHAIN", &["commit", "commit work"]));
        assert!(!is_plain_words("COMMIT", &["commit work"]), "every word of a form");
        assert!(!is_plain_words("START TRANSACTION /*+ x */", &["start transaction"]));
        assert!(!is_plain_words("BEGIN; SELECT 1", &["begin"]));
        assert!(!is_plain_words("ROLLBACK TO `sp`", &["rollback to sp"]));
        assert!(!is_plain_words("BEGIN;;", &["begin"]), "one trailing semicolon only");
    }

    fn kinds(sql: &str) -> Vec<(TokenKind, &str)> {
        Lexer::new(sql).map(|t| (t.kind, t.text)).collect()
    }

    fn significant(sql: &str) -> Vec<(TokenKind, &str)> {
        let mut lx = Lexer::new(sql);
        std::iter::from_fn(|| lx.next_significant())
            .map(|t| (t.kind, t.text))
            .collect()
    }

    #[test]
    fn point_select() {
        assert_eq!(
            kinds("SELECT c FROM sbtest1 WHERE id=?"),
            vec![
                (K::Word, "SELECT"),
                (K::Word, "c"),
                (K::Word, "FROM"),
                (K::Word, "sbtest1"),
                (K::Word, "WHERE"),
                (K::Word, "id"),
                (K::Operator, "="),
                (K::Placeholder, "?"),
            ]
        );
    }

    #[test]
    fn offsets_match_text() {
        let sql = "select `a`, 'b' from t where x <=> @v;";
        for t in Lexer::new(sql) {
            assert_eq!(&sql[t.offset..t.end()], t.text);
        }
    }

    #[test]
    fn no_backslash_escapes_ends_a_string_at_its_quote() {
        let texts = |sql: &str, escapes: bool| -> Vec<String> {
            Lexer::with_backslash_escapes(sql, escapes)
                .map(|t| t.text.to_string())
                .collect()
        };
        let sql = r#"SELECT 'a\', @x, 'b\''c', "d\" FOR UPDATE"#;
        assert_eq!(
            texts(sql, false),
            ["SELECT", r"'a\'", ",", "@x", ",", r"'b\''c'", ",", "\"d\\\"", "FOR", "UPDATE"]
        );
        assert!(
            !texts(sql, true).contains(&"FOR".to_string()),
            "with escapes FOR is in a string"
        );
        assert_eq!(
            texts(r"SELECT 'a\\'", false),
            ["SELECT", r"'a\\'"],
            "two backslashes, one string"
        );
    }

    #[test]
    fn quoted_identifiers() {
        assert_eq!(kinds("`a``b`"), vec![(K::QuotedIdent, "`a``b`")]);
        assert_eq!(kinds("`a\\`"), vec![(K::QuotedIdent, "`a\\`")]);
        assert_eq!(unquote("`a``b`"), "a`b");
        assert_eq!(unquote("`a\\`"), "a\\");
    }

    #[test]
    fn strings_with_escapes() {
        assert_eq!(kinds(r"'it''s'"), vec![(K::String, "'it''s'")]);
        assert_eq!(kinds(r"'it\'s' x"), vec![(K::String, r"'it\'s'"), (K::Word, "x")]);
        assert_eq!(
            kinds(r#""a\"b""c" d"#),
            vec![(K::String, r#""a\"b""c""#), (K::Word, "d")]
        );
        assert_eq!(unquote(r"'it''s'"), "it's");
        assert_eq!(unquote(r"'it\'s\n'"), "it's\n");
        assert_eq!(unquote(r#""q""q""#), "q\"q");
        assert_eq!(unquote("plain"), "plain");
        assert_eq!(unquote("'unterminated"), "unterminated");
        assert_eq!(unquote(r"'a\'"), "a'");
        assert_eq!(unquote("'"), "");
    }

    #[test]
    fn strings_hide_everything() {
        assert_eq!(kinds("'; -- /* @a ? `'"), vec![(K::String, "'; -- /* @a ? `'")]);
    }

    #[test]
    fn numbers_and_literals() {
        assert_eq!(
            kinds("1 1.5 1e10 2.5E-3 .5 0x1F X'0a' b'01' 0b101 B'1'"),
            vec![
                (K::Number, "1"),
                (K::Number, "1.5"),
                (K::Number, "1e10"),
                (K::Number, "2.5E-3"),
                (K::Dot, "."),
                (K::Number, "5"),
                (K::HexLiteral, "0x1F"),
                (K::HexLiteral, "X'0a'"),
                (K::BitLiteral, "b'01'"),
                (K::BitLiteral, "0b101"),
                (K::BitLiteral, "B'1'"),
            ]
        );
    }

    #[test]
    fn identifiers_starting_with_digits() {
        assert_eq!(
            kinds("1abc 0xzz 0x1g 1e"),
            vec![(K::Word, "1abc"), (K::Word, "0xzz"), (K::Word, "0x1g"), (K::Word, "1e"),]
        );
        assert_eq!(kinds("x1 b2"), vec![(K::Word, "x1"), (K::Word, "b2")]);
    }

    #[test]
    fn operators() {
        assert_eq!(
            kinds("a:=b<=>c->>'$.x'!=d<>e||f"),
            vec![
                (K::Word, "a"),
                (K::Operator, ":="),
                (K::Word, "b"),
                (K::Operator, "<=>"),
                (K::Word, "c"),
                (K::Operator, "->>"),
                (K::String, "'$.x'"),
                (K::Operator, "!="),
                (K::Word, "d"),
                (K::Operator, "<>"),
                (K::Word, "e"),
                (K::Operator, "||"),
                (K::Word, "f"),
            ]
        );
    }

    #[test]
    fn comments() {
        assert_eq!(
            kinds("-- c\nSELECT 1 # x\n/* y */ 2--3"),
            vec![
                (K::Comment, "-- c"),
                (K::Word, "SELECT"),
                (K::Number, "1"),
                (K::Comment, "# x"),
                (K::Comment, "/* y */"),
                (K::Number, "2"),
                (K::Operator, "-"),
                (K::Operator, "-"),
                (K::Number, "3"),
            ]
        );
        assert_eq!(kinds("--\tx"), vec![(K::Comment, "--\tx")]);
        assert_eq!(kinds("--"), vec![(K::Comment, "--")]);
        assert_eq!(kinds("/* open"), vec![(K::Comment, "/* open")]);
        assert_eq!(kinds("/*+ BKA(t) */"), vec![(K::HintComment, "/*+ BKA(t) */")]);
    }

    #[test]
    fn executable_comments_are_code() {
        assert_eq!(
            significant("/*!40101 SET NAMES utf8 */;"),
            vec![
                (K::Word, "SET"),
                (K::Word, "NAMES"),
                (K::Word, "utf8"),
                (K::Semicolon, ";"),
            ]
        );
        assert_eq!(
            significant("/*! SELECT */ 1"),
            vec![(K::Word, "SELECT"), (K::Number, "1")]
        );
        assert_eq!(significant("/*M!100101 x*/"), vec![(K::Word, "x")]);
        assert_eq!(significant("/*M! x */"), vec![(K::Word, "x")]);
        assert_eq!(
            significant("/*!50110 KEY_BLOCK_SIZE=8*/"),
            vec![(K::Word, "KEY_BLOCK_SIZE"), (K::Operator, "="), (K::Number, "8"),]
        );
        // Outside an executable comment, `*/` is just two operators.
        assert_eq!(significant("*/"), vec![(K::Operator, "*"), (K::Operator, "/")]);
        // A nested ordinary comment inside an executable one.
        assert_eq!(
            significant("/*!40101 a /* b */ c */ d"),
            vec![(K::Word, "a"), (K::Word, "c"), (K::Word, "d"),]
        );
    }

    #[test]
    fn user_and_system_variables() {
        assert_eq!(
            kinds("@a @a.b$ @'q q' @\"d\" @`b``t` @@x @@session.time_zone @@GLOBAL.`y`"),
            vec![
                (K::UserVar, "@a"),
                (K::UserVar, "@a.b$"),
                (K::UserVar, "@'q q'"),
                (K::UserVar, "@\"d\""),
                (K::UserVar, "@`b``t`"),
                (K::SystemVar, "@@x"),
                (K::SystemVar, "@@session.time_zone"),
                (K::SystemVar, "@@GLOBAL.`y`"),
            ]
        );
        assert_eq!(kinds("@ @@"), vec![(K::Operator, "@"), (K::Operator, "@@")]);
        assert_eq!(kinds("SELECT@a"), vec![(K::Word, "SELECT"), (K::UserVar, "@a")]);
        assert_eq!(kinds("@@x."), vec![(K::SystemVar, "@@x"), (K::Dot, ".")]);
    }

    #[test]
    fn user_at_host_is_not_a_variable() {
        assert_eq!(
            kinds("'bob'@'localhost' `r`@`%` bob@localhost 'u' @'h'"),
            vec![
                (K::String, "'bob'"),
                (K::Operator, "@"),
                (K::String, "'localhost'"),
                (K::QuotedIdent, "`r`"),
                (K::Operator, "@"),
                (K::QuotedIdent, "`%`"),
                (K::Word, "bob"),
                (K::Operator, "@"),
                (K::Word, "localhost"),
                (K::String, "'u'"),
                (K::Operator, "@"),
                (K::String, "'h'"),
            ]
        );
        // Whitespace after a plain word: a variable (`SELECT x, y @a` is not valid anyway).
        assert_eq!(kinds("WHERE @a"), vec![(K::Word, "WHERE"), (K::UserVar, "@a")]);
    }

    #[test]
    fn non_ascii_text() {
        assert_eq!(
            kinds("SELECT été, 'ünï' FROM `tâble`"),
            vec![
                (K::Word, "SELECT"),
                (K::Word, "été"),
                (K::Comma, ","),
                (K::String, "'ünï'"),
                (K::Word, "FROM"),
                (K::QuotedIdent, "`tâble`"),
            ]
        );
    }

    #[test]
    fn unterminated_tokens_run_to_the_end() {
        assert_eq!(kinds("'abc"), vec![(K::String, "'abc")]);
        assert_eq!(kinds("`abc"), vec![(K::QuotedIdent, "`abc")]);
        assert_eq!(kinds("'abc\\"), vec![(K::String, "'abc\\")]);
        assert_eq!(kinds("X'ab"), vec![(K::HexLiteral, "X'ab")]);
        assert_eq!(kinds("@'ab"), vec![(K::UserVar, "@'ab")]);
        assert_eq!(significant("/*!40101 SET"), vec![(K::Word, "SET")]);
    }

    #[test]
    fn starts_with_keyword_skips_comments() {
        assert!(starts_with_keyword("  /* x */ -- y\n select 1", "SELECT"));
        assert!(starts_with_keyword("/*!40101 SET NAMES utf8 */", "set"));
        assert!(starts_with_keyword(
            "start   transaction read only",
            "START TRANSACTION"
        ));
        assert!(!starts_with_keyword("start slave", "START TRANSACTION"));
        assert!(!starts_with_keyword("selects", "SELECT"));
        assert!(!starts_with_keyword("'SELECT'", "SELECT"));
        assert!(!starts_with_keyword("", "SELECT"));
        assert!(!starts_with_keyword("SELECT", ""));
    }
}
