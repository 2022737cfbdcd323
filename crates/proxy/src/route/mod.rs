//! Where a statement runs. A [`Plan`] names its target; [`plan`] is the single place that
//! decides. A target is a group and a role: the group's primary, or "a reader" (a replica or
//! the primary, chosen by weight and health when the statement runs, see
//! [`crate::cluster::Group::choose_read`]). Sharding adds multi-group plans here.

pub use crate::topology::shard_fn;
pub mod sharded;

use crate::cluster::Consistency;
use tessera_sql::{Classification, Flags, RouteHint, StatementKind};

/// The role a statement needs inside its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The current primary: writes, locking reads, transactions, anything with side effects.
    Primary,
    /// Any server fit for the session's consistency level (replicas by weight, or the primary).
    Read,
    /// A replica, because a hint asked for one (the primary only when no replica qualifies).
    Replica,
}

/// One backend group and a role in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Index into the configured groups.
    pub group: usize,
    pub role: Role,
}

impl Target {
    pub const fn primary(group: usize) -> Target {
        Target {
            group,
            role: Role::Primary,
        }
    }

    pub const fn read(group: usize) -> Target {
        Target {
            group,
            role: Role::Read,
        }
    }
}

/// How a statement is executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Forwarded as-is to one server; its response is passed through.
    Direct(Target),
    /// On logical schema `schema` (an index into the topology): the sharding planner's
    /// [`sharded::ShardPlan`] (cached by fingerprint) says which shards run what, and how
    /// their answers merge.
    Sharded { schema: usize },
}

impl Plan {
    /// A one-line description (for logs and a future EXPLAIN).
    pub fn describe(&self, group_names: &[String]) -> String {
        match self {
            Plan::Direct(t) => {
                let group = group_names.get(t.group).map_or("?", String::as_str);
                format!("direct to {group}/{:?}", t.role).to_lowercase()
            }
            Plan::Sharded { schema } => format!("sharded (logical schema #{schema})"),
        }
    }
}

/// What routing needs to know about the session.
#[derive(Clone, Copy)]
pub struct RouteInput<'a> {
    /// Read/write splitting is on for this user.
    pub split: bool,
    pub consistency: Consistency,
    /// `CALL` of a procedure may go to a reader when this says it only reads.
    pub read_only_procedure: &'a dyn Fn(&str) -> bool,
}

/// Plans the statements of one command (all of them run on one connection).
pub fn plan<'a>(statements: impl IntoIterator<Item = (&'a str, &'a Classification)>, input: &RouteInput) -> Plan {
    let mut reader = input.split;
    let mut forced_reader = false;
    for (sql, class) in statements {
        match needs_primary(sql, class, input) {
            Need::Primary => reader = false,
            Need::Reader { forced } => forced_reader |= forced,
        }
    }
    let target = match (reader, forced_reader) {
        (false, _) => Target::primary(0),
        (true, true) => Target {
            group: 0,
            role: Role::Replica,
        },
        (true, false) if input.consistency == Consistency::Strong => Target::primary(0),
        (true, false) => Target::read(0),
    };
    Plan::Direct(target)
}

enum Need {
    Primary,
    /// A reader will do; `forced` when a hint asks for a replica.
    Reader {
        forced: bool,
    },
}

/// Flags that tie a statement to the primary whatever its kind.
const PRIMARY_FLAGS: Flags = Flags::from_bits_truncate(
    Flags::WRITES.bits()
        | Flags::LOCKING_READ.bits()
        | Flags::SELECT_INTO.bits()
        | Flags::LOCK_FUNCTIONS.bits()
        | Flags::LAST_INSERT_ID.bits()
        | Flags::LAST_INSERT_ID_SET.bits()
        | Flags::USER_VAR_WRITE.bits()
        | Flags::TEMPORARY.bits(),
);

fn needs_primary(sql: &str, class: &Classification, input: &RouteInput) -> Need {
    if class.hint == Some(RouteHint::Primary) {
        return Need::Primary;
    }
    let read_kind = match class.kind {
        // Diagnostics statements read the area of the connection the session holds (or one
        // Tessera recreates), never a primary's for its own sake.
        StatementKind::Select | StatementKind::StartTransactionReadOnly | StatementKind::Diagnostics => true,
        StatementKind::Call => procedure_name(sql).is_some_and(|p| (input.read_only_procedure)(&p)),
        _ => false,
    };
    let side_effects = (class.flags.intersects(PRIMARY_FLAGS) && !matches!(class.kind, StatementKind::Call))
        || class.flags.contains(Flags::SEQUENCE);
    if !read_kind || side_effects {
        return Need::Primary;
    }
    Need::Reader {
        forced: class.hint == Some(RouteHint::Replica),
    }
}

/// `CALL db.proc(1)` -> `db.proc` (backticks removed).
fn procedure_name(sql: &str) -> Option<String> {
    let lower_at = sql.to_ascii_lowercase().find("call")?;
    let rest = sql.get(lower_at + 4..)?.trim_start();
    let end = rest
        .find(|c: char| c == '(' || c == ';' || c.is_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..end].replace('`', "");
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_sql::classify;

    fn route(sql: &str, consistency: Consistency) -> Role {
        let c = classify(sql);
        let procs = |p: &str| p.eq_ignore_ascii_case("report") || p.eq_ignore_ascii_case("db.report");
        let input = RouteInput {
            split: true,
            consistency,
            read_only_procedure: &procs,
        };
        match plan([(sql, &c)], &input) {
            Plan::Direct(t) => t.role,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn role(sql: &str) -> Role {
        route(sql, Consistency::Eventual)
    }

    #[test]
    fn plain_reads_go_to_readers_everything_else_to_the_primary() {
        assert_eq!(role("SELECT c FROM sbtest1 WHERE id=?"), Role::Read);
        assert_eq!(role("select 1"), Role::Read);
        assert_eq!(role("SELECT val, value FROM t"), Role::Read);
        assert_eq!(role("START TRANSACTION READ ONLY"), Role::Read);
        for sql in [
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a=1",
            "DELETE FROM t",
            "CREATE TABLE t (a int)",
            "BEGIN",
            "START TRANSACTION",
            "SET autocommit=0",
            "SHOW TABLES",
            "SELECT * FROM t FOR UPDATE",
            "SELECT * FROM t LOCK IN SHARE MODE",
            "SELECT * FROM t FOR SHARE",
            "SELECT GET_LOCK('a', 1)",
            "SELECT LAST_INSERT_ID()",
            "SELECT a INTO @x FROM t",
            "SELECT @x := 1",
            "CALL cleanup()",
            "SELECT NEXTVAL(s)",
            "SELECT next value for s",
            "SELECT SETVAL(s, 10)",
            "SELECT lastval(s)",
            "SELECT PREVIOUS VALUE FOR s",
        ] {
            assert_eq!(role(sql), Role::Primary, "{sql}");
        }
    }

    #[test]
    fn hints_and_consistency() {
        assert_eq!(role("SELECT /*+ tessera:primary */ 1"), Role::Primary);
        assert_eq!(role("/*master*/ SELECT 1"), Role::Primary);
        assert_eq!(route("SELECT 1", Consistency::Strong), Role::Primary);
        assert_eq!(route("SELECT /*slave*/ 1", Consistency::Strong), Role::Replica);
        assert_eq!(
            route("SELECT 1 /*+ tessera:replica */", Consistency::Session),
            Role::Replica
        );
        assert_eq!(
            role("/*slave*/ INSERT INTO t VALUES (1)"),
            Role::Primary,
            "a hint never sends a write to a replica"
        );
    }

    #[test]
    fn read_only_procedures_may_go_to_readers() {
        assert_eq!(role("CALL report(1)"), Role::Read);
        assert_eq!(role("call db.`report`()"), Role::Read);
        assert_eq!(procedure_name("CALL  `x`.`y` ( 1 )").as_deref(), Some("x.y"));
        assert_eq!(procedure_name("CALL"), None);
    }

    #[test]
    fn splitting_off_and_mixed_multi_statements_go_to_the_primary() {
        let (a, b) = (classify("SELECT 1"), classify("INSERT INTO t VALUES (1)"));
        let procs = |_: &str| false;
        let mut input = RouteInput {
            split: true,
            consistency: Consistency::Eventual,
            read_only_procedure: &procs,
        };
        assert_eq!(
            plan([("SELECT 1", &a), ("INSERT", &b)], &input),
            Plan::Direct(Target::primary(0))
        );
        assert_eq!(
            plan([("SELECT 1", &a), ("SELECT 1", &a)], &input),
            Plan::Direct(Target::read(0))
        );
        input.split = false;
        assert_eq!(plan([("SELECT 1", &a)], &input), Plan::Direct(Target::primary(0)));
        assert_eq!(
            Plan::Direct(Target::read(0)).describe(&["main".into()]),
            "direct to main/read"
        );
    }
}
