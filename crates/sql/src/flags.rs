//! [`Flags`]: a small hand-written bit set describing side effects and features of a statement.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};

/// Bit set of statement properties. See the associated constants.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(u32);

impl Flags {
    /// No flag.
    pub const EMPTY: Flags = Flags(0);
    /// Assigns a user variable: `SET @a=..`, `@a := ..`, `SELECT .. INTO @a[, @b]`.
    pub const USER_VAR_WRITE: Flags = Flags(1 << 0);
    /// Reads a user variable (`@a`, not `@@system`).
    pub const USER_VAR_READ: Flags = Flags(1 << 1);
    /// Calls `GET_LOCK(`.
    pub const GET_LOCK: Flags = Flags(1 << 2);
    /// Calls `RELEASE_LOCK(`.
    pub const RELEASE_LOCK: Flags = Flags(1 << 3);
    /// Calls `RELEASE_ALL_LOCKS(`.
    pub const RELEASE_ALL_LOCKS: Flags = Flags(1 << 4);
    /// Calls `IS_USED_LOCK(` or `IS_FREE_LOCK(`.
    pub const IS_USED_LOCK: Flags = Flags(1 << 5);
    /// Uses the `SQL_CALC_FOUND_ROWS` select modifier.
    pub const SQL_CALC_FOUND_ROWS: Flags = Flags(1 << 6);
    /// Calls `FOUND_ROWS(`.
    pub const FOUND_ROWS: Flags = Flags(1 << 7);
    /// Calls `ROW_COUNT(`.
    pub const ROW_COUNT: Flags = Flags(1 << 8);
    /// Reads the connection's last insert id: `LAST_INSERT_ID()`, `@@last_insert_id`, `@@identity`.
    pub const LAST_INSERT_ID: Flags = Flags(1 << 9);
    /// Sets it: `LAST_INSERT_ID(expr)`.
    pub const LAST_INSERT_ID_SET: Flags = Flags(1 << 10);
    /// `FOR UPDATE`, `FOR SHARE`, `LOCK IN SHARE MODE` (with any `NOWAIT`/`SKIP LOCKED`/`OF`).
    pub const LOCKING_READ: Flags = Flags(1 << 11);
    /// `SELECT .. INTO @var | OUTFILE | DUMPFILE`.
    pub const SELECT_INTO: Flags = Flags(1 << 12);
    /// Another non-empty statement follows a top-level `;`.
    pub const MULTI_STATEMENT: Flags = Flags(1 << 13);
    /// Contains a `?` placeholder.
    pub const HAS_PLACEHOLDER: Flags = Flags(1 << 14);
    /// Some statement may write data (by its kind, or `INTO OUTFILE/DUMPFILE`).
    pub const WRITES: Flags = Flags(1 << 15);
    /// Creates or drops a temporary table.
    pub const TEMPORARY: Flags = Flags(1 << 16);
    /// Reads a value the proxy answers for the client's own session: `CONNECTION_ID()`,
    /// `USER()`, `CURRENT_USER[()]`, `SESSION_USER()`, `SYSTEM_USER()`, `@@session_track_*`.
    pub const SESSION_INFO: Flags = Flags(1 << 17);
    /// Reads the diagnostics area: `SHOW WARNINGS|ERRORS`, `SHOW COUNT(*) ..`, `GET
    /// DIAGNOSTICS`, `@@warning_count`, `@@error_count`.
    pub const DIAGNOSTICS: Flags = Flags(1 << 18);
    /// A SELECT that names a sequence function (`NEXTVAL`, `SETVAL`, `LASTVAL`, `CURRVAL`, as
    /// a call or Oracle mode's `s.nextval`; `NEXT VALUE FOR`, `PREVIOUS VALUE FOR`) in its code,
    /// comments and literals aside: a column of that name only costs a primary read. Decided
    /// once here, not at every execution.
    pub const SEQUENCE: Flags = Flags(1 << 19);
    /// Names `PROCESSLIST` (`SHOW PROCESSLIST`, `information_schema.PROCESSLIST`): Tessera
    /// answers the process list with its own sessions.
    pub const PROCESSLIST: Flags = Flags(1 << 20);
    /// May make FOUND_ROWS() differ from the rows sent: a `LIMIT` with an offset, an `OFFSET`,
    /// or a `LIMIT`/`FETCH` beside a `UNION`/`INTERSECT`/`EXCEPT`. A hint (a column named
    /// `offset` sets it too): [`crate::found_rows_effect`] reads the statement to be sure.
    pub const PAGING: Flags = Flags(1 << 21);
    /// May call a stored function: a name before `(` that is neither a known built-in nor a
    /// keyword, or any qualified (`db.f(`) or quoted (`` `f`( ``) one
    /// (the classifier's `stored_calls` rule). Its body may read and change session state.
    pub const STORED_CALL: Flags = Flags(1 << 22);

    /// Any of the advisory-lock functions.
    pub const LOCK_FUNCTIONS: Flags =
        Flags(Self::GET_LOCK.0 | Self::RELEASE_LOCK.0 | Self::RELEASE_ALL_LOCKS.0 | Self::IS_USED_LOCK.0);

    const NAMES: [(&'static str, Flags); 23] = [
        ("USER_VAR_WRITE", Self::USER_VAR_WRITE),
        ("USER_VAR_READ", Self::USER_VAR_READ),
        ("GET_LOCK", Self::GET_LOCK),
        ("RELEASE_LOCK", Self::RELEASE_LOCK),
        ("RELEASE_ALL_LOCKS", Self::RELEASE_ALL_LOCKS),
        ("IS_USED_LOCK", Self::IS_USED_LOCK),
        ("SQL_CALC_FOUND_ROWS", Self::SQL_CALC_FOUND_ROWS),
        ("FOUND_ROWS", Self::FOUND_ROWS),
        ("ROW_COUNT", Self::ROW_COUNT),
        ("LAST_INSERT_ID", Self::LAST_INSERT_ID),
        ("LAST_INSERT_ID_SET", Self::LAST_INSERT_ID_SET),
        ("LOCKING_READ", Self::LOCKING_READ),
        ("SELECT_INTO", Self::SELECT_INTO),
        ("MULTI_STATEMENT", Self::MULTI_STATEMENT),
        ("HAS_PLACEHOLDER", Self::HAS_PLACEHOLDER),
        ("WRITES", Self::WRITES),
        ("TEMPORARY", Self::TEMPORARY),
        ("SESSION_INFO", Self::SESSION_INFO),
        ("DIAGNOSTICS", Self::DIAGNOSTICS),
        ("SEQUENCE", Self::SEQUENCE),
        ("PROCESSLIST", Self::PROCESSLIST),
        ("PAGING", Self::PAGING),
        ("STORED_CALL", Self::STORED_CALL),
    ];

    pub const fn empty() -> Flags {
        Flags(0)
    }

    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Keeps only the defined bits.
    pub const fn from_bits_truncate(bits: u32) -> Flags {
        Flags(bits & ((1 << Self::NAMES.len()) - 1))
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True when every bit of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when any bit of `other` is set.
    pub const fn intersects(self, other: Flags) -> bool {
        self.0 & other.0 != 0
    }

    pub fn insert(&mut self, other: Flags) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: Flags) {
        self.0 &= !other.0;
    }

    pub fn set(&mut self, other: Flags, on: bool) {
        if on {
            self.insert(other);
        } else {
            self.remove(other);
        }
    }

    /// Names of the set flags, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .into_iter()
            .filter(move |(_, f)| self.contains(*f))
            .map(|(n, _)| n)
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Flags {
    type Output = Flags;
    fn bitand(self, rhs: Flags) -> Flags {
        Flags(self.0 & rhs.0)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flags(")?;
        for (i, name) in self.names().enumerate() {
            if i > 0 {
                write!(f, " | ")?;
            }
            write!(f, "{name}")?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_contains_remove() {
        let mut f = Flags::empty();
        assert!(f.is_empty());
        f.insert(Flags::GET_LOCK);
        assert!(f.contains(Flags::GET_LOCK));
        assert!(!f.contains(Flags::GET_LOCK | Flags::WRITES));
        assert!(f.intersects(Flags::GET_LOCK | Flags::WRITES));
        assert!(f.intersects(Flags::LOCK_FUNCTIONS));
        f |= Flags::WRITES;
        assert!(f.contains(Flags::GET_LOCK | Flags::WRITES));
        f.remove(Flags::GET_LOCK);
        assert_eq!(f, Flags::WRITES);
        f.set(Flags::TEMPORARY, true);
        f.set(Flags::WRITES, false);
        assert_eq!(f, Flags::TEMPORARY);
        assert_eq!((f & Flags::TEMPORARY).bits(), 1 << 16);
        assert!(Flags::EMPTY.contains(Flags::EMPTY));
    }

    #[test]
    fn bits_are_distinct() {
        let mut all = 0u32;
        for (_, f) in Flags::NAMES {
            assert_eq!(f.bits().count_ones(), 1);
            assert_eq!(all & f.bits(), 0);
            all |= f.bits();
        }
        assert_eq!(Flags::from_bits_truncate(u32::MAX).bits(), all);
    }

    #[test]
    fn debug_lists_names() {
        assert_eq!(format!("{:?}", Flags::empty()), "Flags()");
        assert_eq!(
            format!("{:?}", Flags::WRITES | Flags::USER_VAR_WRITE),
            "Flags(USER_VAR_WRITE | WRITES)"
        );
    }
}
