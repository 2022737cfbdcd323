//! Comparing two answers: errors by number, OK packets by affected rows, result sets by column
//! metadata and rows (as a sequence when the order is total, else as multisets), and
//! rendering both answers for the report.

use super::side::{abbreviate, Answer};
use crate::common::stmt::{Outcome, StmtError};
use tessera_protocol::resultset::{ColumnDefinition, UNSIGNED_FLAG};

/// MySQL's ER_NOT_SUPPORTED_YET: Tessera's refusal.
pub const REFUSAL_CODE: u16 = 1235;
/// Every refusal's message starts with this.
pub const REFUSAL_PREFIX: &str = "Tessera: ";

/// How two result sets are compared.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mode {
    /// The statement's ORDER BY makes the order total: compare rows in sequence.
    pub ordered: bool,
    /// Values a case/accent-insensitive collation may pick from equal strings (a group's or
    /// DISTINCT's representative, MIN/MAX of strings): compare strings folded.
    pub ci: bool,
    /// Also compare display lengths, all flags, schema and table names, warning counts, and
    /// the OK packet's info and last insert id (DIFFTEST_STRICT_META=1).
    pub strict: bool,
}

/// The refusal message when `sut` refused a statement the reference did not refuse: error 1235
/// naming Tessera (whether the message has the required form is [`well_formed_refusal`]'s).
pub fn refusal(reference: &Answer, sut: &Answer) -> Option<String> {
    let Err(StmtError::Server(e)) = sut else {
        return None;
    };
    let reference_same = matches!(reference, Err(StmtError::Server(r)) if r.code == REFUSAL_CODE);
    (e.code == REFUSAL_CODE && e.message.starts_with("Tessera") && !reference_same).then(|| e.message.clone())
}

/// A refusal's message must start with "Tessera: " (and its SQLSTATE be 42000).
pub fn well_formed_refusal(sut: &Answer) -> bool {
    matches!(sut, Err(StmtError::Server(e)) if e.message.starts_with(REFUSAL_PREFIX) && e.sql_state_str() == "42000")
}

/// Ok when the answers are the same under `mode`; else what differs.
pub fn compare(reference: &Answer, sut: &Answer, mode: Mode) -> Result<(), String> {
    match (reference, sut) {
        (Err(StmtError::Server(a)), Err(StmtError::Server(b))) if a.code == b.code => Ok(()),
        (Err(StmtError::Server(a)), Err(StmtError::Server(b))) => Err(format!("error {} vs error {}", a.code, b.code)),
        (Ok(a), Ok(b)) => compare_outcomes(a, b, mode),
        (_, Err(StmtError::Io(e))) => Err(format!("no answer: {e}")),
        (Err(StmtError::Io(e)), _) => Err(format!("the reference gave no answer: {e}")),
        (Err(_), Ok(_)) => Err("the reference failed, the other side answered".into()),
        (Ok(_), Err(_)) => Err("the reference answered, the other side failed".into()),
    }
}

fn compare_outcomes(a: &Outcome, b: &Outcome, mode: Mode) -> Result<(), String> {
    match (a.columns.is_empty(), b.columns.is_empty()) {
        (true, true) => compare_ok(a, b, mode),
        (false, false) => {
            compare_columns(&a.columns, &b.columns, mode)?;
            if mode.strict && a.warnings != b.warnings {
                return Err(format!("warnings {} vs {}", a.warnings, b.warnings));
            }
            compare_rows(&a.rows, &b.rows, mode)
        }
        (true, false) => Err("OK vs a result set".into()),
        (false, true) => Err("a result set vs OK".into()),
    }
}

fn compare_ok(a: &Outcome, b: &Outcome, mode: Mode) -> Result<(), String> {
    if a.affected_rows != b.affected_rows {
        return Err(format!("affected rows {} vs {}", a.affected_rows, b.affected_rows));
    }
    if mode.strict {
        if a.info != b.info {
            return Err(format!("info {:?} vs {:?}", a.info, b.info));
        }
        if a.warnings != b.warnings {
            return Err(format!("warnings {} vs {}", a.warnings, b.warnings));
        }
        if a.last_insert_id != b.last_insert_id {
            return Err(format!("last insert id {} vs {}", a.last_insert_id, b.last_insert_id));
        }
    }
    Ok(())
}

/// String and blob column types: their `decimals` means nothing (MariaDB sends 0 or 39
/// depending on the plan), so it is compared only in strict mode.
fn is_string_type(t: u8) -> bool {
    matches!(t, 0x0f | 0xf5 | 0xf7..=0xfe)
}

/// The compared part of a column definition.
fn column_key(c: &ColumnDefinition, strict: bool) -> String {
    let decimals = if is_string_type(c.column_type) && !strict {
        "-".to_string()
    } else {
        c.decimals.to_string()
    };
    let base = format!(
        "{:?} type={} decimals={decimals} charset={} unsigned={}",
        c.name,
        c.column_type,
        c.charset,
        c.flags & UNSIGNED_FLAG != 0
    );
    if strict {
        format!(
            "{base} length={} flags={:#x} schema={:?} table={:?}",
            c.length, c.flags, c.schema, c.table
        )
    } else {
        base
    }
}

fn compare_columns(a: &[ColumnDefinition], b: &[ColumnDefinition], mode: Mode) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("{} columns vs {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (kx, ky) = (column_key(x, mode.strict), column_key(y, mode.strict));
        if kx != ky {
            return Err(format!("column {}: {kx} vs {ky}", i + 1));
        }
    }
    Ok(())
}

type Row = Vec<Option<String>>;

fn compare_rows(a: &[Row], b: &[Row], mode: Mode) -> Result<(), String> {
    let fold_rows = |rows: &[Row]| -> Vec<Row> {
        rows.iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.as_deref().map(|s| if mode.ci { fold(s) } else { s.to_string() }))
                    .collect()
            })
            .collect()
    };
    let (mut fa, mut fb) = (fold_rows(a), fold_rows(b));
    if mode.ordered {
        if let Some(i) = (0..fa.len().max(fb.len())).find(|&i| fa.get(i) != fb.get(i)) {
            return Err(format!(
                "{} rows vs {}; first difference at row {}: {} vs {}",
                fa.len(),
                fb.len(),
                i + 1,
                fa.get(i).map_or("(none)".into(), |r| row_text(r)),
                fb.get(i).map_or("(none)".into(), |r| row_text(r)),
            ));
        }
        return Ok(());
    }
    fa.sort();
    fb.sort();
    match multiset_diff(&fa, &fb) {
        None => Ok(()),
        Some(d) => Err(format!("{} rows vs {} (as multisets); {d}", fa.len(), fb.len())),
    }
}

/// For sorted row lists: None when equal, else the rows only in one of them (first 5 each).
pub fn multiset_diff(a: &[Row], b: &[Row]) -> Option<String> {
    let (mut i, mut j) = (0, 0);
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                only_a.push(x);
                i += 1;
            }
            (Some(x), None) => {
                only_a.push(x);
                i += 1;
            }
            (_, Some(y)) => {
                only_b.push(y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    if only_a.is_empty() && only_b.is_empty() {
        return None;
    }
    let show = |rows: &[&Row]| {
        let mut s: Vec<String> = rows.iter().take(5).map(|r| row_text(r)).collect();
        if rows.len() > 5 {
            s.push(format!("... {} more", rows.len() - 5));
        }
        s.join(" ")
    };
    Some(format!(
        "only in the reference ({}): {}; only in the other ({}): {}",
        only_a.len(),
        show(&only_a),
        only_b.len(),
        show(&only_b)
    ))
}

/// A row as `(v1, v2, NULL)`.
pub fn row_text(r: &[Option<String>]) -> String {
    let cells: Vec<String> = r
        .iter()
        .map(|v| v.as_ref().map_or("NULL".to_string(), |s| format!("{s:?}")))
        .collect();
    format!("({})", cells.join(", "))
}

/// A string's comparison form under a case- and accent-insensitive PAD SPACE collation:
/// trailing spaces dropped, lower case, common Latin accents removed. Coarser than
/// utf8mb4_general_ci where it differs, never finer (so it never invents a difference).
pub fn fold(s: &str) -> String {
    s.trim_end_matches(' ')
        .chars()
        .flat_map(char::to_lowercase)
        .map(strip_accent)
        .collect()
}

fn strip_accent(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => 'a',
        'ç' | 'ć' | 'č' => 'c',
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' | 'ě' => 'e',
        'ì' | 'í' | 'î' | 'ï' | 'ī' => 'i',
        'ñ' | 'ń' | 'ň' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ō' | 'ő' => 'o',
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => 'u',
        'ý' | 'ÿ' => 'y',
        'ś' | 'š' | 'ß' => 's',
        'ź' | 'ż' | 'ž' => 'z',
        'ł' => 'l',
        other => other,
    }
}

/// An answer for the report: the error, the OK packet, or the columns and first rows.
pub fn render(answer: &Answer, max_rows: usize) -> String {
    match answer {
        Err(e) => e.to_string(),
        Ok(o) if o.columns.is_empty() => format!(
            "OK affected={} last_insert_id={} warnings={} info={:?}",
            o.affected_rows, o.last_insert_id, o.warnings, o.info
        ),
        Ok(o) => {
            let cols: Vec<String> = o
                .columns
                .iter()
                .map(|c| format!("{}:{}/{}", c.name, c.column_type, c.decimals))
                .collect();
            let mut out = format!("{} rows [{}]", o.rows.len(), cols.join(", "));
            for r in o.rows.iter().take(max_rows) {
                out.push_str("\n        ");
                out.push_str(&abbreviate(&row_text(r), 200));
            }
            if o.rows.len() > max_rows {
                out.push_str(&format!("\n        ... {} more", o.rows.len() - max_rows));
            }
            out
        }
    }
}
