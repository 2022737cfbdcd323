//! The curated corpus format: SQL statements ending with `;`, each optionally followed on the
//! same line by a marker comment (`-- ordered prepared`, `-- refuse: <reason>`, ...). Other
//! comments are ignored. See tests/difftest/README.md.

/// How a statement is run and compared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// The ORDER BY makes the order total: rows are compared in sequence.
    pub ordered: bool,
    /// Also run over the binary protocol with the literals as `?` parameters (for DML: only so).
    pub prepared: bool,
    /// Compare strings folded (the collation may pick any of several equal strings).
    pub ci: bool,
    /// The reference is expected to answer with an error (compared by number).
    pub error: bool,
    /// Refused by design: Tessera may answer 1235 "Tessera: ..." (the reason is documentation).
    pub refuse: Option<String>,
    /// Tables a DML statement changes (default: its target table).
    pub touches: Vec<String>,
}

/// One statement of the corpus (or of the generator).
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub sql: String,
    pub marks: Marks,
    /// `file:line` or `random #n`.
    pub origin: String,
}

impl Statement {
    /// INSERT, REPLACE, UPDATE or DELETE.
    pub fn is_dml(&self) -> bool {
        matches!(
            first_word(&self.sql).as_str(),
            "INSERT" | "REPLACE" | "UPDATE" | "DELETE"
        )
    }

    /// The tables whose contents are checked after this DML statement.
    pub fn touched_tables(&self) -> Vec<String> {
        if !self.marks.touches.is_empty() {
            return self.marks.touches.clone();
        }
        target_table(&self.sql).into_iter().collect()
    }
}

/// The first word of `sql`, upper-cased (leading comments skipped).
fn first_word(sql: &str) -> String {
    words(sql).next().unwrap_or_default()
}

/// Upper-cased words of `sql` outside `/* */` comments, split on whitespace and `(`.
fn words(sql: &str) -> impl Iterator<Item = String> + '_ {
    let mut s = sql.trim_start();
    while let Some(rest) = s.strip_prefix("/*") {
        s = rest.split_once("*/").map_or("", |(_, after)| after).trim_start();
    }
    s.split(|c: char| c.is_whitespace() || c == '(')
        .filter(|w| !w.is_empty())
        .map(str::to_uppercase)
}

/// The table an INSERT / REPLACE / UPDATE / DELETE writes (schema and backticks removed).
fn target_table(sql: &str) -> Option<String> {
    const SKIP: &[&str] = &[
        "INSERT",
        "REPLACE",
        "UPDATE",
        "DELETE",
        "IGNORE",
        "INTO",
        "FROM",
        "LOW_PRIORITY",
        "QUICK",
    ];
    let name = words(sql).find(|w| !SKIP.contains(&w.as_str()))?;
    let name = name.replace('`', "");
    let bare = name.rsplit('.').next().unwrap_or(&name);
    Some(bare.to_lowercase())
}

/// Parses a marker comment's text (after `--`).
pub fn parse_marks(text: &str) -> Result<Marks, String> {
    let mut marks = Marks::default();
    let (head, refuse) = match text.split_once("refuse:") {
        Some((h, r)) => (h, Some(r.trim().to_string())),
        None => (text, None),
    };
    if let Some(reason) = refuse {
        if reason.is_empty() {
            return Err("`refuse:` needs a reason".into());
        }
        marks.refuse = Some(reason);
    }
    for token in head.split([' ', ',', '\t']).filter(|t| !t.is_empty()) {
        match token {
            "ordered" => marks.ordered = true,
            "prepared" => marks.prepared = true,
            "ci" => marks.ci = true,
            "error" => marks.error = true,
            t if t.starts_with("touches=") => {
                marks.touches = t["touches=".len()..].split('+').map(str::to_string).collect();
            }
            other => return Err(format!("unknown marker `{other}`")),
        }
    }
    Ok(marks)
}

/// Lexer state while splitting statements.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Code,
    Quote(char),
    BlockComment,
}

/// Splits a corpus file into statements with their markers; `file` names the origin.
pub fn parse(text: &str, file: &str) -> Result<Vec<Statement>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut state = State::Code;
    let mut current = String::new();
    let (mut line, mut start_line) = (1usize, 0usize);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied().unwrap_or('\0');
        match state {
            State::Code if c == '-' && next == '-' || c == '#' => {
                // A line comment outside a statement's end: dropped.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            State::Code if c == ';' => {
                let sql = current.trim().to_string();
                current.clear();
                let (marks, consumed) = trailing_marks(&chars[i + 1..]).map_err(|e| format!("{file}:{line}: {e}"))?;
                i += 1 + consumed;
                if sql.is_empty() {
                    continue;
                }
                out.push(Statement {
                    sql,
                    marks,
                    origin: format!("{file}:{start_line}"),
                });
                continue;
            }
            State::Code => {
                if c == '\'' || c == '"' || c == '`' {
                    state = State::Quote(c);
                } else if c == '/' && next == '*' {
                    state = State::BlockComment;
                }
            }
            State::Quote(q) => {
                if c == '\\' && q != '`' {
                    current.push(c);
                    current.push(next);
                    i += 2;
                    continue;
                }
                if c == q {
                    state = State::Code;
                }
            }
            State::BlockComment => {
                if c == '*' && next == '/' {
                    current.push_str("*/");
                    i += 2;
                    state = State::Code;
                    continue;
                }
            }
        }
        if current.trim().is_empty() && !c.is_whitespace() {
            start_line = line;
        }
        if c == '\n' {
            line += 1;
        }
        current.push(c);
        i += 1;
    }
    if !current.trim().is_empty() {
        return Err(format!("{file}:{start_line}: statement without a final `;`"));
    }
    Ok(out)
}

/// The marker comment right after a `;` on the same line; returns the marks and how many
/// characters were consumed (up to, not including, the newline).
fn trailing_marks(rest: &[char]) -> Result<(Marks, usize), String> {
    let end = rest.iter().position(|&c| c == '\n').unwrap_or(rest.len());
    let tail: String = rest[..end].iter().collect();
    let trimmed = tail.trim();
    if trimmed.is_empty() {
        return Ok((Marks::default(), end));
    }
    match trimmed.strip_prefix("--") {
        Some(text) => Ok((parse_marks(text)?, end)),
        // More statements on the same line: leave them to the caller.
        None => Ok((Marks::default(), 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_and_markers() {
        let text = "-- heading\nSELECT 1; -- ordered prepared\nSELECT ';' -- inline\n  FROM t;\nINSERT INTO `shop`.orders VALUES (1); -- refuse: no reason at all\n";
        let st = parse(text, "f.sql").expect("parses");
        assert_eq!(st.len(), 3);
        assert_eq!(st[0].sql, "SELECT 1");
        assert!(st[0].marks.ordered && st[0].marks.prepared);
        assert_eq!(st[1].sql, "SELECT ';' \n  FROM t");
        assert_eq!(st[1].origin, "f.sql:3");
        assert!(st[2].is_dml());
        assert_eq!(st[2].touched_tables(), vec!["orders".to_string()]);
        assert_eq!(st[2].marks.refuse.as_deref(), Some("no reason at all"));
        assert!(parse("SELECT 1; -- orderd\n", "f").is_err());
    }
}
