//! Where a scenario's clients connect: through Tessera or straight to the server, so every
//! observation through Tessera has the direct one beside it.

use super::drivers::Login;
use crate::common::Client;

#[derive(Clone, Copy, Debug)]
pub enum Side {
    /// Tessera's port (user app/app).
    Proxy(u16),
    /// The sandbox server's port (user tessera/tessera).
    Direct(u16),
}

impl Side {
    /// How a driver or the CLI logs in on this side, default database `test`.
    pub fn login(self) -> Login<'static> {
        let (port, user) = match self {
            Side::Proxy(p) => (p, "app"),
            Side::Direct(p) => (p, "tessera"),
        };
        Login {
            port,
            user,
            password: user,
            db: Some("test"),
        }
    }

    /// A client on this side with default database `test`.
    pub async fn client(self) -> Client {
        let (port, user) = match self {
            Side::Proxy(p) => (p, "app"),
            Side::Direct(p) => (p, "tessera"),
        };
        Client::connect(port, user, user, Some("test")).await.expect("login")
    }
}
