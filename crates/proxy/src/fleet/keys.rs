//! Where a fleet's records live in etcd, all under `/tessera/<cluster>/`: the published
//! configuration versions and the head (`config/`), and the live proxies (`members/`).

/// The most proxies one cluster has at a time (an id is 1..=MAX_PROXIES).
pub const MAX_PROXIES: u16 = 255;

/// The key layout of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    cluster: String,
    root: String,
}

impl Keys {
    /// The keys of cluster `name` (letters, digits, `-`, `_` and `.`).
    pub fn new(name: &str) -> Result<Self, String> {
        let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty() || name.len() > 64 || !name.chars().all(fits) {
            return Err(format!(
                "cluster name `{name}`: use 1 to 64 letters, digits, `-`, `_` or `.`"
            ));
        }
        Ok(Keys {
            cluster: name.to_string(),
            root: format!("/tessera/{name}/"),
        })
    }

    /// The cluster's name.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The number of the version every proxy should run (decimal text).
    pub fn head(&self) -> String {
        format!("{}config/head", self.root)
    }

    /// Where published version `n` is kept (zero-padded, so a range lists them in order).
    pub fn version(&self, n: u64) -> String {
        format!("{}config/versions/{n:010}", self.root)
    }

    /// The prefix of every published version.
    pub fn versions(&self) -> String {
        format!("{}config/versions/", self.root)
    }

    /// Where live proxy `id` describes itself (under its lease).
    pub fn member(&self, id: u16) -> String {
        format!("{}members/{id:03}", self.root)
    }

    /// The prefix of every live proxy.
    pub fn members(&self) -> String {
        format!("{}members/", self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_number_and_names_are_checked() {
        let k = Keys::new("prod-eu.1").expect("name");
        assert_eq!(k.head(), "/tessera/prod-eu.1/config/head");
        assert!(k.version(9) < k.version(10));
        assert!(k.version(9).starts_with(&k.versions()));
        assert_eq!(k.member(7), "/tessera/prod-eu.1/members/007");
        assert!(Keys::new("a/b").is_err());
        assert!(Keys::new("").is_err());
    }
}
