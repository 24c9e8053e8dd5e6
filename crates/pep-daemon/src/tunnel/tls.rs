//! TLS 1.3 for the tunnel: each node presents its own certificate and
//! accepts exactly one peer certificate (pinned), in both directions.
//! Signatures are still verified (the peer must hold the pinned
//! certificate's key); names and issuers are not consulted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// ALPN of the tunnel protocol.
const ALPN: &[u8] = b"pepkit-tunnel/1";
/// The name split-start asks for (the pinned certificate decides).
pub(crate) const SERVER_NAME: &str = "pep-split-end";

/// Where the node's key material is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub peer_cert: PathBuf,
}

/// Loaded and checked key material.
pub struct Tls {
    pub client: quinn::ClientConfig,
    pub server: quinn::ServerConfig,
}

fn read_cert(path: &Path, field: &str) -> Result<CertificateDer<'static>, String> {
    CertificateDer::from_pem_file(path)
        .map_err(|e| format!("{field}: {}: not a PEM certificate: {e}", path.display()))
}

/// Reads the files and builds both QUIC crypto configs (one node may be
/// either side of a handshake only as its role says, but both are cheap).
pub fn load_tls(files: &TlsFiles, transport: Arc<quinn::TransportConfig>) -> Result<Tls, String> {
    let cert = read_cert(&files.cert, "tunnel.cert")?;
    let peer = read_cert(&files.peer_cert, "tunnel.peer_cert")?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "tunnel.key: {}: not a PEM private key: {e}",
            files.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pinned = Arc::new(Pinned {
        cert: peer,
        provider: provider.clone(),
    });
    let tls13 = &[&rustls::version::TLS13];

    let mut client = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(tls13)
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(pinned.clone())
        .with_client_auth_cert(vec![cert.clone()], key.clone_key())
        .map_err(|e| format!("tunnel.key does not match tunnel.cert: {e}"))?;
    client.alpn_protocols = vec![ALPN.to_vec()];
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(tls13)
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(pinned)
        .with_single_cert(vec![cert], key)
        .map_err(|e| format!("tunnel.key does not match tunnel.cert: {e}"))?;
    server.alpn_protocols = vec![ALPN.to_vec()];

    let client = QuicClientConfig::try_from(client).map_err(|e| e.to_string())?;
    let server = QuicServerConfig::try_from(server).map_err(|e| e.to_string())?;
    let mut client = quinn::ClientConfig::new(Arc::new(client));
    client.transport_config(transport.clone());
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(server));
    server.transport_config(transport);
    Ok(Tls { client, server })
}

/// Accepts exactly one end-entity certificate.
#[derive(Debug)]
struct Pinned {
    cert: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl Pinned {
    fn check(&self, presented: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        if presented.as_ref() == self.cert.as_ref() {
            Ok(())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }
    fn tls13(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|_| ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.tls13(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes()
    }
}

impl ClientCertVerifier for Pinned {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|_| ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.tls13(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes()
    }
}

/// Writes a new self-signed key pair for a node: `<dir>/<name>.pem`
/// (certificate, give it to the peer) and `<dir>/<name>.key` (private,
/// mode 0600). Refuses to overwrite.
pub fn keygen(dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), String> {
    let cert_path = dir.join(format!("{name}.pem"));
    let key_path = dir.join(format!("{name}.key"));
    for p in [&cert_path, &key_path] {
        if p.exists() {
            return Err(format!("{} exists; not overwriting it", p.display()));
        }
    }
    let ck = rcgen::generate_simple_self_signed(vec![format!("{name}.pepkit")])
        .map_err(|e| format!("generating a key pair: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(&cert_path, ck.cert.pem())
        .map_err(|e| format!("{}: {e}", cert_path.display()))?;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_path)
        .map_err(|e| format!("{}: {e}", key_path.display()))?;
    f.write_all(ck.key_pair.serialize_pem().as_bytes())
        .map_err(|e| format!("{}: {e}", key_path.display()))?;
    Ok((cert_path, key_path))
}
