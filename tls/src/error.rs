//! The crate's error type. Every variant that concerns a file names it, because the
//! operator's next step is almost always to look at that file.

use std::fmt;
use std::io;
use std::path::PathBuf;

use rustls::pki_types::pem;

/// Everything that can go wrong while loading certificates or building a TLS config.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read, written or created.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },

    /// A PEM file is larger than any certificate chain, key or CA bundle should be.
    #[error("{}: file is larger than {size_max} bytes; is this really a PEM file?", path.display())]
    TooLarge {
        /// The file involved.
        path: PathBuf,
        /// The size limit that was exceeded.
        size_max: u64,
    },

    /// A file is not well-formed PEM (bad section markers or base64).
    #[error("{}: malformed PEM: {source}", path.display())]
    Pem {
        /// The file involved.
        path: PathBuf,
        /// What the PEM parser objected to.
        source: pem::Error,
    },

    /// A certificate file holds no `BEGIN CERTIFICATE` section.
    #[error("{}: no PEM certificate found (expected a \"BEGIN CERTIFICATE\" block)", path.display())]
    NoCertificates {
        /// The file involved.
        path: PathBuf,
    },

    /// A key file holds no private key section.
    #[error(
        "{}: no PEM private key found (expected a PKCS#8 \"PRIVATE KEY\", PKCS#1 \"RSA PRIVATE KEY\" or SEC1 \"EC PRIVATE KEY\" block)",
        path.display()
    )]
    NoPrivateKey {
        /// The file involved.
        path: PathBuf,
    },

    /// A private key parsed as PEM but the crypto provider cannot use it.
    #[error("{}: unsupported private key: {source}", path.display())]
    UnsupportedKey {
        /// The key file.
        path: PathBuf,
        /// Why the provider rejected the key.
        source: rustls::Error,
    },

    /// A certificate parsed as PEM but is not a usable X.509 certificate.
    #[error("{}: invalid certificate: {source}", path.display())]
    InvalidCertificate {
        /// The certificate file.
        path: PathBuf,
        /// Why the certificate was rejected.
        source: rustls::Error,
    },

    /// A private key does not belong to the first certificate of its chain.
    #[error(
        "private key {} does not match certificate {} (the first certificate in the file must be the server's own)",
        key.display(),
        cert.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },

    /// Only one half of the certificate/key pair was configured.
    #[error(
        "TLS {which} path is not set: set both the certificate and the private key, or neither to use a self-signed certificate"
    )]
    MissingPair {
        /// The half that is missing.
        which: PairMember,
    },

    /// A certificate verifier could not be built from the trusted roots.
    #[error("cannot build a certificate verifier: {0}")]
    Verifier(String),

    /// rustls rejected the configuration as a whole.
    #[error("TLS configuration rejected: {0}")]
    Rustls(#[from] rustls::Error),

    /// The self-signed certificate could not be generated.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// One half of a certificate/key pair, to say which one is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairMember {
    /// The PEM certificate chain.
    Certificate,
    /// The PEM private key.
    PrivateKey,
}

impl fmt::Display for PairMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Certificate => "certificate",
            Self::PrivateKey => "private key",
        })
    }
}

impl Error {
    /// Shorthand for the common case of an I/O error on a known path.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
