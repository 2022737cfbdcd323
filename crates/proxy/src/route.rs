//! Where a statement runs. A [`Plan`] names its target(s); [`plan`] is the single place that
//! decides. This release has one target kind (a group's primary); read/write splitting adds
//! replica roles and sharding adds multi-group plans, without touching the session code.

use tessera_sql::Classification;

/// The role of a server inside its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Primary,
}

/// One backend server: a group and a role in it.
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
}

/// How a statement is executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Forwarded as-is to one server; its response is passed through.
    Direct(Target),
}

impl Plan {
    /// A one-line description (for logs and a future EXPLAIN).
    pub fn describe(&self, group_names: &[String]) -> String {
        match self {
            Plan::Direct(t) => {
                let group = group_names.get(t.group).map_or("?", String::as_str);
                format!("direct to {group}/{:?}", t.role).to_lowercase()
            }
        }
    }
}

/// Plans the statements of one command. Every statement goes to the first group's primary
/// until read/write splitting and sharding land.
pub fn plan<'a>(_statements: impl IntoIterator<Item = &'a Classification>) -> Plan {
    Plan::Direct(Target::primary(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_goes_to_the_primary_for_now() {
        let c = tessera_sql::classify("SELECT 1");
        let p = plan([&c]);
        assert_eq!(p, Plan::Direct(Target::primary(0)));
        assert_eq!(p.describe(&["main".into()]), "direct to main/primary");
    }
}
