//! TLS configuration: the server side for clients (certificate and key from config) and the
//! client side for backends (encryption without certificate verification, as MySQL's
//! `ssl-mode=REQUIRED` does).

use crate::error::ProxyError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;
use tokio_rustls::{TlsAcceptor, TlsConnector};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the acceptor for client connections from PEM files.
pub fn acceptor(cert_path: &str, key_path: &str) -> Result<TlsAcceptor, ProxyError> {
    let read = |p: &str| std::fs::read(p).map_err(|e| ProxyError::Config(format!("cannot read {p}: {e}")));
    let cert_pem = read(cert_path)?;
    let key_pem = read(key_path)?;
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| ProxyError::Config(format!("{cert_path}: bad certificate: {e}")))?;
    let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| ProxyError::Config(format!("{key_path}: bad key: {e}")))?
        .ok_or_else(|| ProxyError::Config(format!("{key_path}: no private key found")))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| ProxyError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ProxyError::Config(format!("tls_cert/tls_key: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Builds the connector Tessera uses towards backends that require TLS.
pub fn backend_connector() -> Result<TlsConnector, ProxyError> {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| ProxyError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider())))
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Encrypts without verifying the server certificate (backends usually have self-signed ones).
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
