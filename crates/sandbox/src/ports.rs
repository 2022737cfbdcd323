//! Picking free TCP ports on 127.0.0.1.

use std::net::{Ipv4Addr, TcpListener};

use crate::error::{Result, SandboxError};

/// Asks the kernel for a currently free port on 127.0.0.1 (bind to port 0, read it, close).
///
/// The port is free only at this instant: callers must cope with losing the race
/// (the server start retries with a new port when mariadbd reports "Address already in use").
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| SandboxError::io("binding 127.0.0.1:0 to find a free port", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| SandboxError::io("reading the address of a 127.0.0.1:0 listener", e))?;
    Ok(addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_port_is_bindable() {
        let port = free_port().expect("free port");
        assert_ne!(port, 0);
        // Usually still free right away.
        let again = TcpListener::bind((Ipv4Addr::LOCALHOST, port));
        assert!(again.is_ok());
    }
}
