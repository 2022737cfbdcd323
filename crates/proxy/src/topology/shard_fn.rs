//! Shard functions: which logical shard a shard-key value lives on (see the README's sharding section).
//!
//! Every function is a formula a user can run in MariaDB to find a row's shard (`n` is the
//! number of shards of the schema, `k` the key):
//!
//! | function | shard of `k` | in MariaDB |
//! |---|---|---|
//! | `hash`, int key | CRC32 of the decimal text, modulo `n` | `CRC32(k) % n` |
//! | `hash`, string key | CRC32 of the UTF-8 of the folded string, modulo `n` | `CRC32(LOWER(TRIM(TRAILING ' ' FROM k))) % n` |
//! | `mod` | the non-negative remainder | `MOD(MOD(k, n) + n, n)` |
//! | `range` | shard `i` holds `[bounds[i-1], bounds[i])` | `bounds[i-1] <= k AND k < bounds[i]` |
//! | `list` | shard `i` holds the values of `lists[i]` | `k IN (lists[i])` |
//! | `date`, year | `YEAR(k) % n` | same |
//! | `date`, month | `(YEAR(k) * 12 + MONTH(k) - 1) % n` | same |
//! | `date`, day | `TO_DAYS(k) % n` | same |
//!
//! `NULL` is on shard 0 for every function (as MySQL partitioning puts NULL in the lowest
//! partition).
//!
//! **Equal values are placed alike.** A value is first brought to the canonical form of the
//! key's type, so the integer `42`, the string `'42'`, the decimal `42.0` and a bound integer
//! parameter 42 are one key:
//!
//! - *int keys* (`hash`, `mod`, `range`, int `list`): integers as they are; strings are read
//!   as MariaDB stores a string in an integer column: leading and trailing whitespace skipped, an
//!   optional sign, decimal digits with an optional fraction and exponent (`' +042'` = 42,
//!   `'4.0'` = 4, `'4e2'` = 400). Anything else (`'42abc'`, `'0x10'`, `''`) is refused with
//!   error 1366. A value with a non-zero fraction (`4.5`, `'4.5'`, the double 4.5) is refused
//!   too: MariaDB would round it on insert, Tessera does not guess. Values outside the BIGINT
//!   range (-9223372036854775808 to 18446744073709551615) are refused with error 1264.
//! - *string keys* (`key_type = "string"`, a utf8mb4 column with a case-insensitive PAD SPACE
//!   collation): trailing spaces removed, then every character lower-cased by Unicode's simple
//!   case mapping ([`tessera_config::fold_string_key`]). Integers and decimals are placed as
//!   their text (what an INSERT stores); doubles are refused. Accent variants (`'a'`, `'á'`)
//!   are distinct keys, although accent-insensitive collations (`utf8mb4_general_ci`) compare
//!   them equal: give such keys an accent-sensitive collation or write them consistently.
//!   MariaDB's `LOWER()` in `utf8mb4_general_ci` knows the case pairs of Unicode 4.0 only:
//!   for strings with upper-case letters added later (e.g. U+0243, U+1E9E, Georgian Mtavruli,
//!   Cherokee, Deseret) the SQL formula differs while Tessera still folds them.
//! - *date keys*: `'YYYY-MM-DD'` with an optional time `hh:mm[:ss[.fraction]]` after a space
//!   or `T` (months and days may have one digit), or the integers `YYYYMMDD` and
//!   `YYYYMMDDhhmmss`. Only the date part places a row. Zero dates and zero parts
//!   (`'0000-00-00'`, `'2024-00-10'`), two-digit years and other separators are refused with
//!   error 1292. `TO_DAYS` is MariaDB's (`TO_DAYS('0000-01-01')` = 1, year 0 is no leap year).

pub use crate::error::plan::ShardError;
use std::collections::HashMap;
use std::fmt;
use std::ops::Bound;
use tessera_config::fold_string_key;
pub use tessera_config::{DateUnit, KeyType};
use thiserror::Error;

/// A shard-key value as the planner extracts it from a literal or a bound parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValue {
    /// `NULL` (a literal or a NULL parameter): shard 0.
    Null,
    /// An integer literal or an integer parameter, signed or unsigned.
    Int(i128),
    /// A string literal (also a `DATE '...'` literal's text) or a text parameter.
    Str(String),
    /// A string parameter whose bytes are not known to be UTF-8.
    Bytes(Vec<u8>),
    /// An approximate number: `1e3` or a FLOAT/DOUBLE parameter.
    Float(f64),
    /// An exact decimal literal (`4.50`) or a DECIMAL parameter, as its text.
    Decimal(String),
}

impl fmt::Display for KeyValue {
    /// The value as MySQL quotes it in error messages (strings without quotes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Null => f.write_str("NULL"),
            KeyValue::Int(i) => write!(f, "{i}"),
            KeyValue::Str(s) | KeyValue::Decimal(s) => f.write_str(s),
            KeyValue::Bytes(b) => f.write_str(&escape_bytes(b)),
            KeyValue::Float(x) => write!(f, "{x}"),
        }
    }
}

/// Bytes as MySQL shows them in messages: valid UTF-8 as is, else printable ASCII and `\xHH`.
fn escape_bytes(b: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(b) {
        return s.to_string();
    }
    b.iter()
        .map(|&c| match c {
            0x20..=0x7e => (c as char).to_string(),
            _ => format!("\\x{c:02X}"),
        })
        .collect()
}

/// A key in canonical form: two values are the same key exactly when their canonical forms are
/// equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CanonicalKey {
    Int(i128),
    /// Folded: trailing spaces removed, lower-cased.
    Str(String),
}

impl fmt::Display for CanonicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CanonicalKey::Int(i) => write!(f, "{i}"),
            CanonicalKey::Str(s) => write!(f, "'{s}'"),
        }
    }
}

/// A table's shard function; `shards` (the schema's shard count) is passed to each call.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardFunction {
    /// `CRC32(canonical text) % shards`.
    Hash { key_type: KeyType },
    /// `MOD(MOD(k, shards) + shards, shards)`, int keys.
    Mod,
    /// Shard `i` holds `[bounds[i-1], bounds[i])`; `shards - 1` ascending bounds, int keys.
    Range { bounds: Vec<i128> },
    /// Shard `i` holds the values of list `i`.
    List(ListFunction),
    /// A date unit number modulo `shards`.
    Date { unit: DateUnit },
}

impl ShardFunction {
    /// The shard of one key value; an error when the value cannot be placed (a value no list
    /// holds: MySQL's 1526 "Table has no partition for value X"; a non-integer for an int key).
    pub fn shard_of(&self, v: &KeyValue, shards: usize) -> Result<usize, ShardError> {
        if shards == 0 {
            return Err(ShardError::ShardCount { shards });
        }
        if *v == KeyValue::Null {
            return Ok(0);
        }
        let shard = match self {
            ShardFunction::Hash { key_type } => hash_shard(*key_type, v, shards)?,
            ShardFunction::Mod => mod_shard(int_key(v)?, shards),
            ShardFunction::Range { bounds } => range_shard(bounds, int_key(v)?),
            ShardFunction::List(list) => list.shard_of(v)?,
            ShardFunction::Date { unit } => unit_shard(unit_number(*unit, date_key(v)?), shards),
        };
        if shard < shards {
            Ok(shard)
        } else {
            Err(ShardError::ShardCount { shards })
        }
    }

    /// Shards that may hold values in `[lo, hi]` (each end included, excluded or open), in
    /// ascending order; `None` = cannot narrow (all shards). An empty set means no value can
    /// match. Narrows `range` and int `list` always, `date` when the span covers fewer units
    /// than shards, `mod` and int `hash` when the integer interval is shorter than the shard
    /// count. A NULL or unreadable bound never narrows.
    pub fn shards_for_range(&self, lo: Bound<&KeyValue>, hi: Bound<&KeyValue>, shards: usize) -> Option<Vec<usize>> {
        if shards == 0 {
            return None;
        }
        let found = match self {
            ShardFunction::Range { bounds } => {
                let (lo, hi) = int_interval(lo, hi)?;
                let first = lo.map_or(0, |k| range_shard(bounds, k));
                let last = hi.map_or(bounds.len(), |k| range_shard(bounds, k));
                if lo.zip(hi).is_some_and(|(l, h)| l > h) {
                    Vec::new()
                } else {
                    (first..=last).collect()
                }
            }
            ShardFunction::List(list) => list.shards_in(lo, hi)?,
            ShardFunction::Date { unit } => date_shards(*unit, lo, hi, shards)?,
            ShardFunction::Mod => small_interval(lo, hi, shards, |k| Ok(mod_shard(k, shards)))?,
            ShardFunction::Hash { key_type: KeyType::Int } => {
                small_interval(lo, hi, shards, |k| hash_shard(KeyType::Int, &KeyValue::Int(k), shards))?
            }
            ShardFunction::Hash {
                key_type: KeyType::String,
            } => return None,
        };
        found.iter().all(|&s| s < shards).then_some(found)
    }
}

/// The canonical form of `v` for a key of `key_type`; `None` for NULL.
pub fn canonical(key_type: KeyType, v: &KeyValue) -> Result<Option<CanonicalKey>, ShardError> {
    Ok(match (key_type, v) {
        (_, KeyValue::Null) => None,
        (KeyType::Int, v) => Some(CanonicalKey::Int(int_key(v)?)),
        (KeyType::String, v) => Some(CanonicalKey::Str(string_key(v)?)),
    })
}

fn hash_shard(key_type: KeyType, v: &KeyValue, shards: usize) -> Result<usize, ShardError> {
    let text = match key_type {
        KeyType::Int => int_key(v)?.to_string(),
        KeyType::String => string_key(v)?,
    };
    Ok((u64::from(crc32(text.as_bytes())) % shards as u64) as usize)
}

fn mod_shard(k: i128, shards: usize) -> usize {
    let n = shards as i128;
    (((k % n) + n) % n) as usize
}

/// The number of bounds at or below `k`: shard `i` holds `[bounds[i-1], bounds[i])`.
fn range_shard(bounds: &[i128], k: i128) -> usize {
    bounds.partition_point(|b| *b <= k)
}

fn unit_shard(unit_number: i64, shards: usize) -> usize {
    unit_number.rem_euclid(shards as i64) as usize
}

/// One bound of an integer interval, inclusive: `Some(None)` when open, `None` when the value
/// is NULL or not an integer (no narrowing then).
fn int_bound(b: Bound<&KeyValue>, lower: bool) -> Option<Option<i128>> {
    match b {
        Bound::Unbounded => Some(None),
        Bound::Included(KeyValue::Null) | Bound::Excluded(KeyValue::Null) => None,
        Bound::Included(v) => Some(Some(int_key(v).ok()?)),
        Bound::Excluded(v) => {
            let k = int_key(v).ok()?;
            Some(Some(if lower { k + 1 } else { k - 1 }))
        }
    }
}

/// `[lo, hi]` as inclusive integers; `None` (no narrowing) when either end is unreadable.
fn int_interval(lo: Bound<&KeyValue>, hi: Bound<&KeyValue>) -> Option<(Option<i128>, Option<i128>)> {
    Some((int_bound(lo, true)?, int_bound(hi, false)?))
}

/// The shards of every integer in `[lo, hi]` when there are fewer of them than shards.
fn small_interval(
    lo: Bound<&KeyValue>,
    hi: Bound<&KeyValue>,
    shards: usize,
    shard: impl Fn(i128) -> Result<usize, ShardError>,
) -> Option<Vec<usize>> {
    let (Some(lo), Some(hi)) = int_interval(lo, hi)? else {
        return None;
    };
    if lo > hi {
        return Some(Vec::new());
    }
    if hi - lo + 1 >= shards as i128 {
        return None;
    }
    let found: Result<Vec<usize>, ShardError> = (lo..=hi).map(shard).collect();
    Some(sorted_unique(found.ok()?))
}

fn sorted_unique(mut shards: Vec<usize>) -> Vec<usize> {
    shards.sort_unstable();
    shards.dedup();
    shards
}

/// A `list` function: each canonical value maps to its shard.
#[derive(Debug, Clone, PartialEq)]
pub struct ListFunction {
    key_type: KeyType,
    lists: Vec<Vec<CanonicalKey>>,
    index: HashMap<CanonicalKey, usize>,
}

/// Why lists cannot make a [`ListFunction`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ListError {
    #[error("list {list}: {source}")]
    Value { list: usize, source: ShardError },
    #[error("list {list}: NULL cannot be listed (NULL keys are on shard 0)")]
    Null { list: usize },
    #[error("list {list}: {value} is listed twice")]
    Duplicate { list: usize, value: CanonicalKey },
}

impl ListFunction {
    /// Shard `i` holds the values of `lists[i]`; values are compared in canonical form, so
    /// each may appear once only.
    pub fn new(key_type: KeyType, lists: &[Vec<KeyValue>]) -> Result<ListFunction, ListError> {
        let mut index = HashMap::new();
        let mut canonical_lists = Vec::with_capacity(lists.len());
        for (list, values) in lists.iter().enumerate() {
            let mut canonical_values = Vec::with_capacity(values.len());
            for v in values {
                let value = canonical(key_type, v)
                    .map_err(|source| ListError::Value { list, source })?
                    .ok_or(ListError::Null { list })?;
                if index.insert(value.clone(), list).is_some() {
                    return Err(ListError::Duplicate { list, value });
                }
                canonical_values.push(value);
            }
            canonical_lists.push(canonical_values);
        }
        Ok(ListFunction {
            key_type,
            lists: canonical_lists,
            index,
        })
    }

    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The canonical values of each shard.
    pub fn lists(&self) -> &[Vec<CanonicalKey>] {
        &self.lists
    }

    fn shard_of(&self, v: &KeyValue) -> Result<usize, ShardError> {
        let Some(key) = canonical(self.key_type, v)? else {
            return Ok(0);
        };
        self.index
            .get(&key)
            .copied()
            .ok_or_else(|| ShardError::NoPartition { value: key.to_string() })
    }

    /// The shards of the listed values within the bounds (int keys only: string order depends
    /// on the collation).
    fn shards_in(&self, lo: Bound<&KeyValue>, hi: Bound<&KeyValue>) -> Option<Vec<usize>> {
        if self.key_type != KeyType::Int {
            return None;
        }
        let (lo, hi) = int_interval(lo, hi)?;
        let inside = |k: i128| lo.is_none_or(|l| l <= k) && hi.is_none_or(|h| k <= h);
        let found = self.index.iter().filter_map(|(key, &shard)| match key {
            CanonicalKey::Int(k) if inside(*k) => Some(shard),
            _ => None,
        });
        Some(sorted_unique(found.collect()))
    }
}

/// The smallest and largest BIGINT values (signed and unsigned).
const BIGINT_MIN: i128 = i64::MIN as i128;
const BIGINT_MAX: i128 = u64::MAX as i128;

/// The integer of an int key (see the module docs for what is accepted).
fn int_key(v: &KeyValue) -> Result<i128, ShardError> {
    let k = match v {
        KeyValue::Int(i) => *i,
        KeyValue::Str(s) | KeyValue::Decimal(s) => parse_integer(s)?,
        KeyValue::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => parse_integer(s)?,
            Err(_) => return Err(incorrect_integer(v)),
        },
        KeyValue::Float(x) => float_integer(*x).ok_or_else(|| incorrect_integer(v))?,
        KeyValue::Null => return Err(incorrect_integer(v)),
    };
    if (BIGINT_MIN..=BIGINT_MAX).contains(&k) {
        Ok(k)
    } else {
        Err(ShardError::OutOfRange { value: v.to_string() })
    }
}

fn incorrect_integer(v: &KeyValue) -> ShardError {
    ShardError::IncorrectInteger { value: v.to_string() }
}

/// An integral double as an integer (`None` when it has a fraction or is not finite); one
/// beyond the BIGINT range is returned as is, to be refused as out of range.
fn float_integer(x: f64) -> Option<i128> {
    // 2^100 keeps the conversion exact while being far outside the BIGINT range.
    const LIMIT: f64 = 1.2676506002282294e30;
    (x.is_finite() && x.fract() == 0.0).then(|| x.clamp(-LIMIT, LIMIT) as i128)
}

/// Whitespace MariaDB skips around a number in a string.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// A string read as MariaDB reads it into an integer column, refusing what it would truncate
/// or round: `[space][sign]digits[.digits][e[sign]digits][space]`.
fn parse_integer(text: &str) -> Result<i128, ShardError> {
    let bad = || ShardError::IncorrectInteger {
        value: text.to_string(),
    };
    let s = text.trim_matches(is_space);
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], parse_exponent(&s[at + 1..]).ok_or_else(bad)?),
        None => (s, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
        return Err(bad());
    }
    let magnitude = scaled_digits(&format!("{whole}{fraction}"), exponent - fraction.len() as i64).ok_or_else(bad)?;
    match magnitude {
        Magnitude::Fits(m) => Ok(if negative { -m } else { m }),
        Magnitude::TooLarge => Err(ShardError::OutOfRange {
            value: text.to_string(),
        }),
    }
}

/// `[sign]digits` of an exponent, saturated far beyond any meaningful scale.
fn parse_exponent(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = digits
        .bytes()
        .fold(0i64, |acc, b| {
            acc.saturating_mul(10).saturating_add(i64::from(b - b'0'))
        })
        .min(1 << 40);
    Some(if negative { -value } else { value })
}

enum Magnitude {
    Fits(i128),
    /// More than 21 digits: far outside the BIGINT range.
    TooLarge,
}

/// `digits * 10^scale` when it is an integer; `None` when non-zero digits fall below the point.
fn scaled_digits(digits: &str, scale: i64) -> Option<Magnitude> {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(Magnitude::Fits(0));
    }
    let kept = if scale < 0 {
        let cut = usize::try_from(-scale).ok()?;
        let (kept, dropped) = digits.split_at(digits.len().checked_sub(cut)?);
        dropped.bytes().all(|b| b == b'0').then_some(kept)?
    } else {
        digits
    };
    let zeros = usize::try_from(scale.max(0)).ok()?;
    if kept.len().saturating_add(zeros) > 21 {
        return Some(Magnitude::TooLarge);
    }
    let mut m: i128 = 0;
    for b in kept.bytes().chain(std::iter::repeat_n(b'0', zeros)) {
        m = m * 10 + i128::from(b - b'0');
    }
    Some(Magnitude::Fits(m))
}

/// The folded text of a string key.
fn string_key(v: &KeyValue) -> Result<String, ShardError> {
    match v {
        KeyValue::Str(s) | KeyValue::Decimal(s) => Ok(fold_string_key(s)),
        KeyValue::Int(i) => Ok(i.to_string()),
        KeyValue::Bytes(b) => std::str::from_utf8(b)
            .map(fold_string_key)
            .map_err(|_| ShardError::IncorrectString { value: v.to_string() }),
        KeyValue::Float(_) | KeyValue::Null => Err(ShardError::IncorrectString { value: v.to_string() }),
    }
}

/// A calendar date: year 0-9999, month 1-12, day 1-31 (valid for the month).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Date {
    year: i64,
    month: i64,
    day: i64,
}

/// The date part of a date key (see the module docs for what is accepted).
fn date_key(v: &KeyValue) -> Result<Date, ShardError> {
    let found = match v {
        KeyValue::Str(s) => parse_date_text(s),
        KeyValue::Bytes(b) => std::str::from_utf8(b).ok().and_then(parse_date_text),
        KeyValue::Int(i) => date_of_integer(*i),
        KeyValue::Null | KeyValue::Float(_) | KeyValue::Decimal(_) => None,
    };
    found.ok_or_else(|| ShardError::IncorrectDate { value: v.to_string() })
}

/// `YYYYMMDD` or `YYYYMMDDhhmmss`.
fn date_of_integer(i: i128) -> Option<Date> {
    let (date, time) = match i {
        10_000_000..=99_999_999 => (i, None),
        10_000_000_000_000..=99_999_999_999_999 => (i / 1_000_000, Some(i % 1_000_000)),
        _ => return None,
    };
    if let Some(t) = time {
        valid_time(t / 10_000, t / 100 % 100, t % 100).then_some(())?;
    }
    let part = |x: i128| i64::try_from(x).ok();
    valid_date(part(date / 10_000)?, part(date / 100 % 100)?, part(date % 100)?)
}

/// `YYYY-M-D[( |T)h:m[:s[.fraction]]]` with surrounding whitespace.
fn parse_date_text(text: &str) -> Option<Date> {
    let s = text.trim_matches(is_space);
    let (date, time) = match s.find([' ', 'T']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let year = number(parts.next()?, 4, 4)?;
    let month = number(parts.next()?, 1, 2)?;
    let day = number(parts.next()?, 1, 2)?;
    if parts.next().is_some() {
        return None;
    }
    if let Some(time) = time {
        parse_time(time)?;
    }
    valid_date(year, month, day)
}

/// `h:m[:s[.fraction]]`, each of one or two digits (a fraction only after seconds).
fn parse_time(time: &str) -> Option<()> {
    let (hms, fraction) = match time.split_once('.') {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (time, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let fraction_ok =
        fraction.is_none_or(|f| parts.len() == 3 && !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    if !(2..=3).contains(&parts.len()) || !fraction_ok {
        return None;
    }
    let hour = number(parts[0], 1, 2)?;
    let minute = number(parts[1], 1, 2)?;
    let second = parts.get(2).map_or(Some(0), |s| number(s, 1, 2))?;
    valid_time(hour.into(), minute.into(), second.into()).then_some(())
}

/// Decimal digits, `min..=max` of them.
fn number(s: &str, min: usize, max: usize) -> Option<i64> {
    let valid = (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
    valid.then(|| s.bytes().fold(0, |acc, b| acc * 10 + i64::from(b - b'0')))
}

fn valid_time(hour: i128, minute: i128, second: i128) -> bool {
    hour < 24 && minute < 60 && second < 60
}

fn valid_date(year: i64, month: i64, day: i64) -> Option<Date> {
    let valid =
        (0..=9999).contains(&year) && (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month);
    valid.then_some(Date { year, month, day })
}

/// MariaDB's leap years: every fourth, not centuries unless divisible by 400, and not year 0.
fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || (year % 400 == 0 && year != 0));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// MariaDB's `TO_DAYS` (`calc_daynr`): days since year 0, `TO_DAYS('0000-01-01')` = 1.
fn to_days(d: Date) -> i64 {
    let mut y = d.year;
    let mut days = 365 * y + 31 * (d.month - 1) + d.day;
    if d.month <= 2 {
        y -= 1;
    } else {
        days -= (d.month * 4 + 23) / 10;
    }
    // Truncating division, as in C.
    days + y / 4 - ((y / 100 + 1) * 3) / 4
}

/// The number of the unit holding `d`: `YEAR`, `YEAR * 12 + MONTH - 1` or `TO_DAYS`.
fn unit_number(unit: DateUnit, d: Date) -> i64 {
    match unit {
        DateUnit::Year => d.year,
        DateUnit::Month => d.year * 12 + d.month - 1,
        DateUnit::Day => to_days(d),
    }
}

/// The shards of every unit from `lo` to `hi` (ends taken as included: a superset), when the
/// span covers fewer units than shards.
fn date_shards(unit: DateUnit, lo: Bound<&KeyValue>, hi: Bound<&KeyValue>, shards: usize) -> Option<Vec<usize>> {
    let end = |b: Bound<&KeyValue>| match b {
        Bound::Included(v) | Bound::Excluded(v) => date_key(v).ok().map(|d| unit_number(unit, d)),
        Bound::Unbounded => None,
    };
    let (lo, hi) = (end(lo)?, end(hi)?);
    if lo > hi {
        return Some(Vec::new());
    }
    if hi - lo + 1 >= shards as i64 {
        return None;
    }
    Some(sorted_unique((lo..=hi).map(|u| unit_shard(u, shards)).collect()))
}

/// CRC-32 (IEEE 802.3, reflected, as zlib and MySQL's `CRC32()`).
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |crc, &b| {
        CRC_TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use KeyValue::{Decimal, Float, Int, Null, Str};

    fn s(text: &str) -> KeyValue {
        Str(text.to_string())
    }

    const HASH_INT: ShardFunction = ShardFunction::Hash { key_type: KeyType::Int };
    const HASH_STR: ShardFunction = ShardFunction::Hash {
        key_type: KeyType::String,
    };

    fn range() -> ShardFunction {
        ShardFunction::Range {
            bounds: vec![1000, 2000, 3000],
        }
    }

    fn list(key_type: KeyType, lists: &[&[KeyValue]]) -> ShardFunction {
        let lists: Vec<Vec<KeyValue>> = lists.iter().map(|l| l.to_vec()).collect();
        ShardFunction::List(ListFunction::new(key_type, &lists).expect("valid lists"))
    }

    fn date(unit: DateUnit) -> ShardFunction {
        ShardFunction::Date { unit }
    }

    #[test]
    fn crc32_is_mysqls() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        // Values MariaDB 10.11 printed for CRC32(...).
        assert_eq!(crc32(b"-9223372036854775808"), 2_871_333_643);
        assert_eq!(crc32(b"18446744073709551615"), 3_221_115_162);
        assert_eq!(crc32("ärger".as_bytes()), 2_302_070_447);
    }

    #[test]
    fn equal_values_of_any_form_hash_alike() {
        let expected = (crc32(b"42") % 4) as usize;
        for v in [
            Int(42),
            s("42"),
            s(" +042 "),
            s("\t42\n"),
            s("4.2e1"),
            s("42.000"),
            Decimal("42.0".into()),
            Float(42.0),
            KeyValue::Bytes(b"42".to_vec()),
        ] {
            assert_eq!(HASH_INT.shard_of(&v, 4), Ok(expected), "{v:?}");
        }
        let e = HASH_STR.shard_of(&s("ärger"), 7);
        for v in [s("Ärger"), s("ÄRGER   "), KeyValue::Bytes("ärger".as_bytes().to_vec())] {
            assert_eq!(HASH_STR.shard_of(&v, 7), e, "{v:?}");
        }
        assert_eq!(HASH_STR.shard_of(&s("ärger"), 7), Ok((2_302_070_447u32 % 7) as usize));
        assert_eq!(HASH_STR.shard_of(&Int(42), 4), HASH_STR.shard_of(&s("42"), 4));
        assert_eq!(
            HASH_STR.shard_of(&Decimal("4.50".into()), 4),
            HASH_STR.shard_of(&s("4.50"), 4)
        );
        assert_eq!(HASH_STR.shard_of(&s(""), 4), Ok(0), "CRC32('') = 0");
    }

    #[test]
    fn int_keys_read_strings_like_mariadb_and_refuse_guesses() {
        for (text, k) in [
            ("042", 42),
            ("-0", 0),
            (".0", 0),
            ("4.", 4),
            ("4e2", 400),
            ("4E+2", 400),
            ("400e-2", 4),
            ("-1.5e1", -15),
            ("0e999999999999", 0),
            ("18446744073709551615", BIGINT_MAX),
            ("-9223372036854775808", BIGINT_MIN),
            ("1.8446744073709551615e19", BIGINT_MAX),
        ] {
            assert_eq!(int_key(&s(text)), Ok(k), "{text}");
        }
        for text in [
            "42abc", "0x10", "", " ", "+", "-", ".", "e2", "4e", "4e+", "+ 4", "4 2", "4.5", "1e-1", "--4", "4..0",
            "٤٢",
        ] {
            assert_eq!(
                int_key(&s(text)),
                Err(ShardError::IncorrectInteger { value: text.into() }),
                "{text}"
            );
        }
        for text in [
            "18446744073709551616",
            "-9223372036854775809",
            "99999999999999999999999999",
            "1e30",
        ] {
            assert_eq!(
                int_key(&s(text)),
                Err(ShardError::OutOfRange { value: text.into() }),
                "{text}"
            );
        }
        assert_eq!(
            int_key(&Int(BIGINT_MAX + 1)),
            Err(ShardError::OutOfRange {
                value: "18446744073709551616".into()
            })
        );
        assert_eq!(int_key(&Float(-3.0)), Ok(-3));
        assert_eq!(
            int_key(&Float(4.5)),
            Err(ShardError::IncorrectInteger { value: "4.5".into() })
        );
        assert_eq!(
            int_key(&Float(f64::NAN)),
            Err(ShardError::IncorrectInteger { value: "NaN".into() })
        );
        assert!(matches!(int_key(&Float(1e20)), Err(ShardError::OutOfRange { .. })));
        assert_eq!(int_key(&Decimal("-7.00".into())), Ok(-7));
        assert_eq!(
            int_key(&KeyValue::Bytes(vec![0xff, b'1'])),
            Err(ShardError::IncorrectInteger { value: "\\xFF1".into() })
        );
    }

    #[test]
    fn string_keys_refuse_doubles_and_invalid_utf8() {
        assert_eq!(
            HASH_STR.shard_of(&Float(1.5), 4),
            Err(ShardError::IncorrectString { value: "1.5".into() })
        );
        let e = HASH_STR.shard_of(&KeyValue::Bytes(vec![b'a', 0xc3]), 4);
        assert_eq!(e, Err(ShardError::IncorrectString { value: "a\\xC3".into() }));
    }

    #[test]
    fn modulo_is_never_negative() {
        let m = ShardFunction::Mod;
        for (k, shard) in [
            (0, 0),
            (5, 1),
            (-1, 3),
            (-4, 0),
            (-5, 3),
            (BIGINT_MIN, 0),
            (BIGINT_MAX, 3),
        ] {
            assert_eq!(m.shard_of(&Int(k), 4), Ok(shard), "{k}");
        }
        assert_eq!(m.shard_of(&s("-5"), 4), Ok(3));
        assert!(matches!(
            m.shard_of(&s("x"), 4),
            Err(ShardError::IncorrectInteger { .. })
        ));
    }

    #[test]
    fn range_bounds_open_the_next_shard() {
        let r = range();
        for (k, shard) in [
            (BIGINT_MIN, 0),
            (999, 0),
            (1000, 1),
            (1999, 1),
            (2000, 2),
            (2999, 2),
            (3000, 3),
            (BIGINT_MAX, 3),
        ] {
            assert_eq!(r.shard_of(&Int(k), 4), Ok(shard), "{k}");
        }
        assert_eq!(r.shard_of(&s("2000"), 4), Ok(2));
        assert_eq!(
            r.shard_of(&Int(5000), 2),
            Err(ShardError::ShardCount { shards: 2 }),
            "bounds do not fit"
        );
    }

    #[test]
    fn lists_place_listed_values_only() {
        let l = list(
            KeyType::Int,
            &[&[Int(1), Int(2)], &[Int(3)], &[Int(4), Int(5)], &[Int(6)]],
        );
        for (k, shard) in [(1, 0), (2, 0), (3, 1), (4, 2), (5, 2), (6, 3)] {
            assert_eq!(l.shard_of(&Int(k), 4), Ok(shard), "{k}");
        }
        assert_eq!(l.shard_of(&s(" 3"), 4), Ok(1));
        let e = l.shard_of(&Int(7), 4).unwrap_err();
        assert_eq!(e.to_string(), "Table has no partition for value 7");
        assert_eq!(e.mysql_code(), (1526, "HY000"));
        let l = list(KeyType::String, &[&[s("DE"), s("at")], &[s("fr ")]]);
        assert_eq!(l.shard_of(&s("de  "), 2), Ok(0));
        assert_eq!(l.shard_of(&s("FR"), 2), Ok(1));
        let e = l.shard_of(&s("It"), 2).unwrap_err();
        assert_eq!(e.to_string(), "Table has no partition for value 'it'");
        let ShardFunction::List(f) = l else { unreachable!() };
        assert_eq!(
            (f.key_type(), f.lists()[1].clone()),
            (KeyType::String, vec![CanonicalKey::Str("fr".into())])
        );
    }

    #[test]
    fn list_construction_refuses_duplicates_nulls_and_wrong_types() {
        let dup = ListFunction::new(KeyType::String, &[vec![s("a")], vec![s("A ")]]);
        assert_eq!(
            dup,
            Err(ListError::Duplicate {
                list: 1,
                value: CanonicalKey::Str("a".into())
            })
        );
        let dup = ListFunction::new(KeyType::Int, &[vec![Int(1), s("01")]]);
        assert!(matches!(dup, Err(ListError::Duplicate { list: 0, .. })));
        assert_eq!(
            ListFunction::new(KeyType::Int, &[vec![Null]]),
            Err(ListError::Null { list: 0 })
        );
        let wrong = ListFunction::new(KeyType::Int, &[vec![], vec![s("x")]]).unwrap_err();
        assert_eq!(
            wrong.to_string(),
            "list 1: Incorrect integer value: 'x' for the shard key"
        );
    }

    #[test]
    fn dates_count_years_months_and_mariadb_days() {
        let day = |text: &str| date_key(&s(text)).map(to_days);
        for (text, days) in [
            ("0000-01-01", 1),
            ("0000-03-01", 60),
            ("0001-01-01", 366),
            ("2024-03-15", 739_325),
            ("9999-12-31", 3_652_424),
            ("2000-02-29", 730_544),
            ("2024-03-15 23:59:59.999999", 739_325),
        ] {
            assert_eq!(day(text), Ok(days), "{text}");
        }
        assert_eq!(date(DateUnit::Year).shard_of(&s("2024-03-15"), 4), Ok(0));
        assert_eq!(date(DateUnit::Year).shard_of(&s("2023-12-31"), 4), Ok(3));
        assert_eq!(date(DateUnit::Month).shard_of(&s("2024-03-15"), 12), Ok(2));
        assert_eq!(date(DateUnit::Month).shard_of(&s("2024-01-01"), 5), Ok((2024 * 12) % 5));
        assert_eq!(date(DateUnit::Day).shard_of(&s("2024-03-15"), 7), Ok(739_325 % 7));
    }

    #[test]
    fn date_formats_accepted_and_refused() {
        let march_5 = Ok(Date {
            year: 2024,
            month: 3,
            day: 5,
        });
        for text in [
            "2024-03-05",
            "2024-3-5",
            " 2024-03-05\t",
            "2024-03-05T10:00:00",
            "2024-03-05 1:2:3",
            "2024-03-05 10:00",
            "2024-03-05 23:59:59.9999999",
        ] {
            assert_eq!(date_key(&s(text)), march_5, "{text}");
        }
        assert_eq!(date_key(&Int(20240305)), march_5);
        assert_eq!(date_key(&Int(20240305235959)), march_5);
        assert_eq!(date_key(&KeyValue::Bytes(b"2024-03-05".to_vec())), march_5);
        for text in [
            "2024-02-30",
            "1900-02-29",
            "0000-02-29",
            "0000-00-00",
            "2024-00-10",
            "2024-13-01",
            "2024-03-05 24:00:00",
            "2024-03-05 10:60",
            "2024-03-05 10:00.5",
            "2024-03-05 10:00:00.",
            "99-03-05",
            "2024/03/05",
            "20240305",
            "2024-03-05-01",
            "2024-03-05  10:00:00",
            "",
            "10000-01-01",
        ] {
            let e = date_key(&s(text));
            assert_eq!(e, Err(ShardError::IncorrectDate { value: text.into() }), "{text}");
        }
        for v in [
            Int(2024030),
            Int(20241305),
            Int(20240305240000),
            Float(20240305.0),
            Decimal("20240305".into()),
        ] {
            assert!(matches!(date_key(&v), Err(ShardError::IncorrectDate { .. })), "{v:?}");
        }
        assert_eq!(date_key(&s("2024-02-29")).map(|d| d.day), Ok(29));
    }

    #[test]
    fn null_is_on_shard_0_and_zero_shards_is_an_error() {
        let l = list(KeyType::Int, &[&[Int(1)], &[Int(2)]]);
        for f in [HASH_INT, HASH_STR, ShardFunction::Mod, range(), l, date(DateUnit::Day)] {
            assert_eq!(f.shard_of(&Null, 4), Ok(0), "{f:?}");
            assert_eq!(f.shard_of(&Null, 0), Err(ShardError::ShardCount { shards: 0 }));
            assert_eq!(f.shards_for_range(Bound::Unbounded, Bound::Unbounded, 0), None);
        }
    }

    fn inc(v: &KeyValue) -> Bound<&KeyValue> {
        Bound::Included(v)
    }

    fn exc(v: &KeyValue) -> Bound<&KeyValue> {
        Bound::Excluded(v)
    }

    #[test]
    fn ranges_narrow_range_functions() {
        let r = range();
        let (a, b) = (Int(1500), Int(2500));
        assert_eq!(r.shards_for_range(inc(&a), inc(&b), 4), Some(vec![1, 2]));
        let (a, b) = (Int(999), Int(2000));
        assert_eq!(r.shards_for_range(exc(&a), exc(&b), 4), Some(vec![1]));
        assert_eq!(r.shards_for_range(inc(&a), inc(&b), 4), Some(vec![0, 1, 2]));
        assert_eq!(r.shards_for_range(Bound::Unbounded, exc(&Int(1000)), 4), Some(vec![0]));
        assert_eq!(r.shards_for_range(inc(&Int(3000)), Bound::Unbounded, 4), Some(vec![3]));
        assert_eq!(
            r.shards_for_range(Bound::Unbounded, Bound::Unbounded, 4),
            Some(vec![0, 1, 2, 3])
        );
        assert_eq!(
            r.shards_for_range(inc(&Int(5)), exc(&Int(5)), 4),
            Some(vec![]),
            "empty interval"
        );
        assert_eq!(r.shards_for_range(inc(&s("1500")), inc(&s("1600")), 4), Some(vec![1]));
        assert_eq!(
            r.shards_for_range(inc(&Decimal("1.5".into())), Bound::Unbounded, 4),
            None
        );
        assert_eq!(r.shards_for_range(inc(&Null), Bound::Unbounded, 4), None);
        assert_eq!(
            r.shards_for_range(Bound::Unbounded, Bound::Unbounded, 2),
            None,
            "bounds do not fit"
        );
    }

    #[test]
    fn short_intervals_narrow_mod_and_int_hash() {
        let m = ShardFunction::Mod;
        assert_eq!(m.shards_for_range(inc(&Int(5)), inc(&Int(6)), 4), Some(vec![1, 2]));
        assert_eq!(m.shards_for_range(inc(&Int(-1)), inc(&Int(1)), 4), Some(vec![0, 1, 3]));
        assert_eq!(m.shards_for_range(exc(&Int(4)), exc(&Int(8)), 4), Some(vec![1, 2, 3]));
        assert_eq!(
            m.shards_for_range(inc(&Int(4)), inc(&Int(7)), 4),
            None,
            "as long as the shard count"
        );
        assert_eq!(m.shards_for_range(inc(&Int(4)), Bound::Unbounded, 4), None);
        assert_eq!(m.shards_for_range(inc(&Int(7)), inc(&Int(4)), 4), Some(vec![]));
        let shard = |k: i128| HASH_INT.shard_of(&Int(k), 8).expect("int");
        let mut expected = vec![shard(41), shard(42), shard(43)];
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(
            HASH_INT.shards_for_range(inc(&Int(41)), inc(&Int(43)), 8),
            Some(expected)
        );
        assert_eq!(HASH_INT.shards_for_range(inc(&Int(41)), inc(&Int(48)), 8), None);
        assert_eq!(HASH_STR.shards_for_range(inc(&s("a")), inc(&s("a")), 8), None);
    }

    #[test]
    fn ranges_narrow_int_lists_exactly() {
        let l = list(
            KeyType::Int,
            &[&[Int(1), Int(2)], &[Int(3)], &[Int(4), Int(50)], &[Int(6)]],
        );
        assert_eq!(l.shards_for_range(inc(&Int(2)), inc(&Int(4)), 4), Some(vec![0, 1, 2]));
        assert_eq!(l.shards_for_range(exc(&Int(2)), exc(&Int(4)), 4), Some(vec![1]));
        assert_eq!(l.shards_for_range(inc(&Int(7)), Bound::Unbounded, 4), Some(vec![2]));
        assert_eq!(l.shards_for_range(inc(&Int(7)), inc(&Int(9)), 4), Some(vec![]));
        let strings = list(KeyType::String, &[&[s("a")], &[s("b")]]);
        assert_eq!(strings.shards_for_range(inc(&s("a")), inc(&s("b")), 2), None);
    }

    #[test]
    fn date_ranges_enumerate_few_units() {
        let months = date(DateUnit::Month);
        let (a, b) = (s("2024-01-15"), s("2024-03-01 00:00:00"));
        assert_eq!(months.shards_for_range(inc(&a), exc(&b), 12), Some(vec![0, 1, 2]));
        assert_eq!(
            months.shards_for_range(inc(&s("2023-12-01")), inc(&s("2024-01-31")), 12),
            Some(vec![0, 11])
        );
        assert_eq!(
            months.shards_for_range(inc(&a), inc(&s("2025-01-01")), 12),
            None,
            "13 months"
        );
        assert_eq!(months.shards_for_range(inc(&b), inc(&a), 12), Some(vec![]));
        assert_eq!(months.shards_for_range(inc(&a), Bound::Unbounded, 12), None);
        assert_eq!(months.shards_for_range(inc(&s("yesterday")), inc(&a), 12), None);
        let days = date(DateUnit::Day);
        let expected = sorted_unique(vec![739_325 % 7, 739_326 % 7]);
        assert_eq!(
            days.shards_for_range(inc(&s("2024-03-15")), inc(&s("2024-03-16")), 7),
            Some(expected)
        );
        let years = date(DateUnit::Year);
        assert_eq!(
            years.shards_for_range(inc(&s("2024-03-15")), inc(&s("2025-01-01")), 4),
            Some(vec![0, 1])
        );
    }

    #[test]
    fn errors_carry_mysql_codes_and_messages() {
        let cases = [
            (
                ShardError::IncorrectInteger { value: "4x".into() },
                1366,
                "22007",
                "Incorrect integer value: '4x' for column `id`",
            ),
            (
                ShardError::IncorrectString { value: "1.5".into() },
                1366,
                "22007",
                "Incorrect string value: '1.5' for column `id`",
            ),
            (
                ShardError::OutOfRange { value: "1e30".into() },
                1264,
                "22003",
                "Out of range value for column 'id'",
            ),
            (
                ShardError::IncorrectDate { value: "x".into() },
                1292,
                "22007",
                "Incorrect date value: 'x' for column `id`",
            ),
            (
                ShardError::NoPartition { value: "7".into() },
                1526,
                "HY000",
                "Table has no partition for value 7",
            ),
            (
                ShardError::ShardCount { shards: 0 },
                1105,
                "HY000",
                "the shard function does not fit a schema of 0 shards",
            ),
        ];
        for (e, code, state, message) in cases {
            assert_eq!(e.mysql_code(), (code, state), "{e}");
            assert_eq!(e.mysql_message("id"), message);
        }
    }
}
