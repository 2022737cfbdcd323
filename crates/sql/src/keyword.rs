//! Keyword recognition: maps an unquoted word to the small set of keywords the classifier cares about.

/// Keywords (and function names) the classifier looks at. Everything else is [`Kw::None`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kw {
    None,
    Except,
    Fetch,
    Intersect,
    Limit,
    Offset,
    Union,
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
    ConnectionId,
    Current,
    Stacked,
    CurrentUser,
    Currval,
    SessionUser,
    SystemUser,
    Diagnostics,
    Get,
    Warnings,
    Errors,
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
    Format,
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
    Lastval,
    LastInsertId,
    Load,
    Local,
    Lock,
    LowPriority,
    Mode,
    Names,
    Next,
    Nextval,
    Not,
    Only,
    Or,
    Outfile,
    Password,
    Persist,
    PersistOnly,
    Previous,
    Procedure,
    Processlist,
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
    Setval,
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

/// Every keyword, upper case, sorted (checked by a unit test) to keep the list tidy.
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
    ("CONNECTION_ID", Kw::ConnectionId),
    ("CREATE", Kw::Create),
    ("CURRENT", Kw::Current),
    ("CURRENT_USER", Kw::CurrentUser),
    ("CURRVAL", Kw::Currval),
    ("DATA", Kw::Data),
    ("DEALLOCATE", Kw::Deallocate),
    ("DEFAULT", Kw::Default),
    ("DELETE", Kw::Delete),
    ("DESC", Kw::Desc),
    ("DESCRIBE", Kw::Describe),
    ("DIAGNOSTICS", Kw::Diagnostics),
    ("DO", Kw::Do),
    ("DROP", Kw::Drop),
    ("DUMPFILE", Kw::Dumpfile),
    ("ERRORS", Kw::Errors),
    ("EXCEPT", Kw::Except),
    ("EXECUTE", Kw::Execute),
    ("EXISTS", Kw::Exists),
    ("EXPLAIN", Kw::Explain),
    ("FETCH", Kw::Fetch),
    ("FLUSH", Kw::Flush),
    ("FOR", Kw::For),
    ("FORMAT", Kw::Format),
    ("FOUND_ROWS", Kw::FoundRows),
    ("GET", Kw::Get),
    ("GET_LOCK", Kw::GetLock),
    ("GLOBAL", Kw::Global),
    ("HANDLER", Kw::Handler),
    ("HARD", Kw::Hard),
    ("ID", Kw::Id),
    ("IF", Kw::If),
    ("IN", Kw::In),
    ("INFILE", Kw::Infile),
    ("INSERT", Kw::Insert),
    ("INTERSECT", Kw::Intersect),
    ("INTO", Kw::Into),
    ("IS_FREE_LOCK", Kw::IsFreeLock),
    ("IS_USED_LOCK", Kw::IsUsedLock),
    ("KILL", Kw::Kill),
    ("LASTVAL", Kw::Lastval),
    ("LAST_INSERT_ID", Kw::LastInsertId),
    ("LIMIT", Kw::Limit),
    ("LOAD", Kw::Load),
    ("LOCAL", Kw::Local),
    ("LOCK", Kw::Lock),
    ("LOW_PRIORITY", Kw::LowPriority),
    ("MODE", Kw::Mode),
    ("NAMES", Kw::Names),
    ("NEXT", Kw::Next),
    ("NEXTVAL", Kw::Nextval),
    ("NOT", Kw::Not),
    ("OFFSET", Kw::Offset),
    ("ONLY", Kw::Only),
    ("OR", Kw::Or),
    ("OUTFILE", Kw::Outfile),
    ("PASSWORD", Kw::Password),
    ("PERSIST", Kw::Persist),
    ("PERSIST_ONLY", Kw::PersistOnly),
    ("PREPARE", Kw::Prepare),
    ("PREVIOUS", Kw::Previous),
    ("PROCEDURE", Kw::Procedure),
    ("PROCESSLIST", Kw::Processlist),
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
    ("SESSION_USER", Kw::SessionUser),
    ("SET", Kw::Set),
    ("SETVAL", Kw::Setval),
    ("SHARE", Kw::Share),
    ("SHOW", Kw::Show),
    ("SOFT", Kw::Soft),
    ("SQL_CALC_FOUND_ROWS", Kw::SqlCalcFoundRows),
    ("STACKED", Kw::Stacked),
    ("START", Kw::Start),
    ("STATEMENT", Kw::Statement),
    ("SYSTEM_USER", Kw::SystemUser),
    ("TABLE", Kw::Table),
    ("TABLES", Kw::Tables),
    ("TEMPORARY", Kw::Temporary),
    ("TO", Kw::To),
    ("TRANSACTION", Kw::Transaction),
    ("TRUNCATE", Kw::Truncate),
    ("UNION", Kw::Union),
    ("UNLOCK", Kw::Unlock),
    ("UPDATE", Kw::Update),
    ("USE", Kw::Use),
    ("USER", Kw::User),
    ("VALUES", Kw::Values),
    ("WARNINGS", Kw::Warnings),
    ("WITH", Kw::With),
    ("WORK", Kw::Work),
    ("XA", Kw::Xa),
    ("XML", Kw::Xml),
];

/// Longest keyword in [`KEYWORDS`] (`SQL_CALC_FOUND_ROWS`).
const MAX_LEN: usize = 19;

/// Open-addressing hash table of indexes into [`KEYWORDS`], built at compile time.
const SLOTS: usize = 1024;
const EMPTY: u8 = u8::MAX;
const TABLE: [u8; SLOTS] = build_table();

/// Case-insensitive hash of a word of at least two bytes. Clearing bit 5 folds ASCII letters to
/// upper case without a branch (other bytes change too, the same way on both sides).
const fn hash(word: &[u8]) -> usize {
    let n = word.len();
    let first = (word[0] & 0xdf) as usize;
    let second = (word[1] & 0xdf) as usize;
    let last = (word[n - 1] & 0xdf) as usize;
    (first * 31 + second * 17 + last * 7 + n * 101) % SLOTS
}

const fn build_table() -> [u8; SLOTS] {
    let mut table = [EMPTY; SLOTS];
    let mut i = 0;
    while i < KEYWORDS.len() {
        let mut slot = hash(KEYWORDS[i].0.as_bytes());
        while table[slot] != EMPTY {
            slot = (slot + 1) % SLOTS;
        }
        table[slot] = i as u8;
        i += 1;
    }
    table
}

impl Kw {
    /// Looks up an unquoted word, ASCII case-insensitively, without allocating.
    pub(crate) fn lookup(word: &str) -> Kw {
        let bytes = word.as_bytes();
        if bytes.len() < 2 || bytes.len() > MAX_LEN {
            return Kw::None;
        }
        let mut slot = hash(bytes);
        loop {
            let index = TABLE[slot];
            if index == EMPTY {
                return Kw::None;
            }
            let (name, kw) = KEYWORDS[index as usize];
            if name.len() == bytes.len() && folds_to(bytes, name.as_bytes()) {
                return kw;
            }
            slot = (slot + 1) % SLOTS;
        }
    }
}

/// Whether `word` is `upper` (upper-case letters and `_`) in any letter case. Clearing bit 5
/// folds a letter to upper case; of the other bytes only DEL would fold onto `_`, and no word
/// holds it.
fn folds_to(word: &[u8], upper: &[u8]) -> bool {
    word.iter().zip(upper).all(|(&b, &u)| b & 0xdf == u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_upper_case_letters_and_underscores() {
        for (k, _) in KEYWORDS {
            assert!(k.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'), "{k}");
        }
        assert!(!folds_to(b"s3lect", b"SELECT"));
        assert!(!folds_to(b"LAST INSERT ID", b"LAST_INSERT_ID"));
    }

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
    fn table_has_short_probe_chains() {
        assert!(KEYWORDS.len() < SLOTS / 2 && KEYWORDS.len() < EMPTY as usize);
        let mut longest = 0;
        for (k, _) in KEYWORDS {
            let mut slot = hash(k.as_bytes());
            let mut probes = 1;
            while KEYWORDS[TABLE[slot] as usize].0 != *k {
                slot = (slot + 1) % SLOTS;
                probes += 1;
            }
            longest = longest.max(probes);
        }
        assert!(longest <= 4, "longest probe chain {longest}");
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
