//! Keyword recognition: maps an unquoted word to the small set of keywords the classifier cares about.

/// Keywords (and function names) the classifier looks at. Everything else is [`Kw::None`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kw {
    None,
    Alter,
    Analyze,
    As,
    Begin,
    Call,
    Character,
    Charset,
    Commit,
    Concurrent,
    Connection,
    Create,
    Data,
    Deallocate,
    Default,
    Delete,
    Desc,
    Describe,
    Do,
    Drop,
    Dumpfile,
    Execute,
    Exists,
    Explain,
    Flush,
    For,
    FoundRows,
    GetLock,
    Global,
    Handler,
    Hard,
    Id,
    If,
    In,
    Infile,
    Insert,
    Into,
    IsFreeLock,
    IsUsedLock,
    Kill,
    LastInsertId,
    Load,
    Local,
    Lock,
    LowPriority,
    Mode,
    Names,
    Not,
    Only,
    Or,
    Outfile,
    Password,
    Persist,
    PersistOnly,
    Prepare,
    Query,
    Read,
    Release,
    ReleaseAllLocks,
    ReleaseLock,
    Rename,
    Replace,
    Role,
    Rollback,
    RowCount,
    Savepoint,
    Select,
    Session,
    Set,
    Share,
    Show,
    Soft,
    SqlCalcFoundRows,
    Start,
    Statement,
    Table,
    Tables,
    Temporary,
    To,
    Transaction,
    Truncate,
    Unlock,
    Update,
    Use,
    User,
    Values,
    With,
    Work,
    Xa,
    Xml,
}

/// Sorted by byte value (checked by a unit test) so lookups can binary-search.
const KEYWORDS: &[(&str, Kw)] = &[
    ("ALTER", Kw::Alter),
    ("ANALYZE", Kw::Analyze),
    ("AS", Kw::As),
    ("BEGIN", Kw::Begin),
    ("CALL", Kw::Call),
    ("CHARACTER", Kw::Character),
    ("CHARSET", Kw::Charset),
    ("COMMIT", Kw::Commit),
    ("CONCURRENT", Kw::Concurrent),
    ("CONNECTION", Kw::Connection),
    ("CREATE", Kw::Create),
    ("DATA", Kw::Data),
    ("DEALLOCATE", Kw::Deallocate),
    ("DEFAULT", Kw::Default),
    ("DELETE", Kw::Delete),
    ("DESC", Kw::Desc),
    ("DESCRIBE", Kw::Describe),
    ("DO", Kw::Do),
    ("DROP", Kw::Drop),
    ("DUMPFILE", Kw::Dumpfile),
    ("EXECUTE", Kw::Execute),
    ("EXISTS", Kw::Exists),
    ("EXPLAIN", Kw::Explain),
    ("FLUSH", Kw::Flush),
    ("FOR", Kw::For),
    ("FOUND_ROWS", Kw::FoundRows),
    ("GET_LOCK", Kw::GetLock),
    ("GLOBAL", Kw::Global),
    ("HANDLER", Kw::Handler),
    ("HARD", Kw::Hard),
    ("ID", Kw::Id),
    ("IF", Kw::If),
    ("IN", Kw::In),
    ("INFILE", Kw::Infile),
    ("INSERT", Kw::Insert),
    ("INTO", Kw::Into),
    ("IS_FREE_LOCK", Kw::IsFreeLock),
    ("IS_USED_LOCK", Kw::IsUsedLock),
    ("KILL", Kw::Kill),
    ("LAST_INSERT_ID", Kw::LastInsertId),
    ("LOAD", Kw::Load),
    ("LOCAL", Kw::Local),
    ("LOCK", Kw::Lock),
    ("LOW_PRIORITY", Kw::LowPriority),
    ("MODE", Kw::Mode),
    ("NAMES", Kw::Names),
    ("NOT", Kw::Not),
    ("ONLY", Kw::Only),
    ("OR", Kw::Or),
    ("OUTFILE", Kw::Outfile),
    ("PASSWORD", Kw::Password),
    ("PERSIST", Kw::Persist),
    ("PERSIST_ONLY", Kw::PersistOnly),
    ("PREPARE", Kw::Prepare),
    ("QUERY", Kw::Query),
    ("READ", Kw::Read),
    ("RELEASE", Kw::Release),
    ("RELEASE_ALL_LOCKS", Kw::ReleaseAllLocks),
    ("RELEASE_LOCK", Kw::ReleaseLock),
    ("RENAME", Kw::Rename),
    ("REPLACE", Kw::Replace),
    ("ROLE", Kw::Role),
    ("ROLLBACK", Kw::Rollback),
    ("ROW_COUNT", Kw::RowCount),
    ("SAVEPOINT", Kw::Savepoint),
    ("SELECT", Kw::Select),
    ("SESSION", Kw::Session),
    ("SET", Kw::Set),
    ("SHARE", Kw::Share),
    ("SHOW", Kw::Show),
    ("SOFT", Kw::Soft),
    ("SQL_CALC_FOUND_ROWS", Kw::SqlCalcFoundRows),
    ("START", Kw::Start),
    ("STATEMENT", Kw::Statement),
    ("TABLE", Kw::Table),
    ("TABLES", Kw::Tables),
    ("TEMPORARY", Kw::Temporary),
    ("TO", Kw::To),
    ("TRANSACTION", Kw::Transaction),
    ("TRUNCATE", Kw::Truncate),
    ("UNLOCK", Kw::Unlock),
    ("UPDATE", Kw::Update),
    ("USE", Kw::Use),
    ("USER", Kw::User),
    ("VALUES", Kw::Values),
    ("WITH", Kw::With),
    ("WORK", Kw::Work),
    ("XA", Kw::Xa),
    ("XML", Kw::Xml),
];

/// Longest keyword in [`KEYWORDS`] (`SQL_CALC_FOUND_ROWS`).
const MAX_LEN: usize = 19;

impl Kw {
    /// Looks up an unquoted word, ASCII case-insensitively, without allocating.
    pub(crate) fn lookup(word: &str) -> Kw {
        let bytes = word.as_bytes();
        if bytes.len() < 2 || bytes.len() > MAX_LEN {
            return Kw::None;
        }
        let mut buf = [0u8; MAX_LEN];
        for (dst, src) in buf.iter_mut().zip(bytes) {
            *dst = src.to_ascii_uppercase();
        }
        let key = &buf[..bytes.len()];
        match KEYWORDS.binary_search_by(|(k, _)| k.as_bytes().cmp(key)) {
            Ok(i) => KEYWORDS[i].1,
            Err(_) => Kw::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_unique_and_bounded() {
        for pair in KEYWORDS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} !< {}", pair[0].0, pair[1].0);
        }
        let longest = KEYWORDS.iter().map(|(k, _)| k.len()).max().unwrap();
        assert_eq!(longest, MAX_LEN);
        for (k, _) in KEYWORDS {
            assert!(k.len() >= 2);
            assert_eq!(*k, k.to_ascii_uppercase());
        }
    }

    #[test]
    fn every_entry_round_trips() {
        for (k, v) in KEYWORDS {
            assert_eq!(Kw::lookup(k), *v);
            assert_eq!(Kw::lookup(&k.to_ascii_lowercase()), *v);
        }
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(Kw::lookup("select"), Kw::Select);
        assert_eq!(Kw::lookup("SeLeCt"), Kw::Select);
        assert_eq!(Kw::lookup("get_lock"), Kw::GetLock);
    }

    #[test]
    fn unknown_words() {
        assert_eq!(Kw::lookup(""), Kw::None);
        assert_eq!(Kw::lookup("a"), Kw::None);
        assert_eq!(Kw::lookup("sbtest1"), Kw::None);
        assert_eq!(Kw::lookup("selects"), Kw::None);
        assert_eq!(Kw::lookup("SQL_CALC_FOUND_ROWSX"), Kw::None);
        assert_eq!(Kw::lookup("séléct"), Kw::None);
    }
}
