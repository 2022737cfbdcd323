//! The options of a COMMIT or ROLLBACK: `[WORK] [AND [NO] CHAIN] [[NO] RELEASE]`.

use crate::Lexer;

/// What a COMMIT or ROLLBACK says about chaining and releasing; `None` where it is silent and
/// the session's `completion_type` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndOptions {
    pub chain: Option<bool>,
    pub release: Option<bool>,
}

impl EndOptions {
    /// The server's rule (MariaDB `sql_parse.cc`, SQLCOM_COMMIT/ROLLBACK): an explicit option
    /// wins, else `completion_type` 1 (CHAIN) chains and 2 (RELEASE) releases. Returns
    /// `(chain, release)`.
    pub fn resolve(self, completion_type: u8) -> (bool, bool) {
        let chain = self.chain.unwrap_or(completion_type == 1);
        let release = self.release.unwrap_or(completion_type == 2);
        (chain, release)
    }
}

/// The options of a COMMIT or ROLLBACK statement (its first word is not checked).
pub fn end_options(sql: &str) -> EndOptions {
    let mut options = EndOptions::default();
    let mut negated = false;
    for token in Lexer::new(sql).filter(|t| t.is_significant()).skip(1) {
        let word = token.text;
        if word.eq_ignore_ascii_case("no") {
            negated = true;
        } else if word.eq_ignore_ascii_case("chain") {
            options.chain = Some(!std::mem::take(&mut negated));
        } else if word.eq_ignore_ascii_case("release") {
            options.release = Some(!std::mem::take(&mut negated));
        } else if word == ";" {
            break;
        }
    }
    options
}

/// `completion_type` as the server reports it (`NO_CHAIN`, `CHAIN`, `RELEASE`, or 0-2) as its
/// number; 0 for anything else.
pub fn completion_type_level(value: &str) -> u8 {
    match value.trim_matches('\'') {
        v if v.eq_ignore_ascii_case("CHAIN") || v == "1" => 1,
        v if v.eq_ignore_ascii_case("RELEASE") || v == "2" => 2,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(sql: &str) -> (Option<bool>, Option<bool>) {
        let o = end_options(sql);
        (o.chain, o.release)
    }

    #[test]
    fn reads_every_form_of_the_grammar() {
        assert_eq!(opts("COMMIT"), (None, None));
        assert_eq!(opts("commit work"), (None, None));
        assert_eq!(opts("COMMIT AND CHAIN"), (Some(true), None));
        assert_eq!(opts("COMMIT AND NO CHAIN"), (Some(false), None));
        assert_eq!(opts("COMMIT RELEASE"), (None, Some(true)));
        assert_eq!(opts("ROLLBACK WORK NO RELEASE"), (None, Some(false)));
        assert_eq!(opts("COMMIT AND CHAIN NO RELEASE"), (Some(true), Some(false)));
        assert_eq!(opts("COMMIT AND NO CHAIN RELEASE"), (Some(false), Some(true)));
        assert_eq!(
            opts("/* x */ rollback /* y */ and no chain no release;"),
            (Some(false), Some(false))
        );
    }

    #[test]
    fn explicit_options_win_over_completion_type() {
        assert_eq!(end_options("COMMIT").resolve(0), (false, false));
        assert_eq!(end_options("COMMIT").resolve(1), (true, false));
        assert_eq!(end_options("COMMIT").resolve(2), (false, true));
        assert_eq!(end_options("COMMIT NO RELEASE").resolve(2), (false, false));
        assert_eq!(end_options("COMMIT AND NO CHAIN").resolve(1), (false, false));
        assert_eq!(end_options("COMMIT RELEASE").resolve(0), (false, true));
        assert_eq!(completion_type_level("RELEASE"), 2);
        assert_eq!(completion_type_level("chain"), 1);
        assert_eq!(completion_type_level("NO_CHAIN"), 0);
    }
}
