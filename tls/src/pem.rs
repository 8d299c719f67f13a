//! Reading PEM files: certificate chains, CA bundles and private keys.
//!
//! Files are read whole (with a size cap) and parsed from memory so that I/O errors and
//! PEM syntax errors are reported separately, each with the path.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::Error;

/// The largest PEM file we read. A certificate chain or key is a few KiB and the full
/// Mozilla CA bundle about 250 KiB; anything past this is a misconfigured path (a log, a
/// disk image) that we should refuse rather than load into memory.
const PEM_FILE_SIZE_MAX: u64 = 4 * 1024 * 1024;

/// Reads every certificate in `path`, in file order. Fails if there is none.
pub(crate) fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bytes = read_capped(path)?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::Pem {
            path: path.to_owned(),
            source,
        })?;
    if certificates.is_empty() {
        return Err(Error::NoCertificates { path: path.to_owned() });
    }
    Ok(certificates)
}

/// Reads the first private key (PKCS#8, PKCS#1 or SEC1) in `path`.
pub(crate) fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, Error> {
    let bytes = read_capped(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|source| match source {
        pem::Error::NoItemsFound => Error::NoPrivateKey { path: path.to_owned() },
        source => Error::Pem {
            path: path.to_owned(),
            source,
        },
    })
}

fn read_capped(path: &Path) -> Result<Vec<u8>, Error> {
    let file = File::open(path).map_err(|source| Error::io(path, source))?;
    let mut bytes = Vec::new();
    // Reading one byte past the cap distinguishes "exactly at the limit" from "over it".
    file.take(PEM_FILE_SIZE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| Error::io(path, source))?;
    if bytes.len() as u64 > PEM_FILE_SIZE_MAX {
        return Err(Error::TooLarge {
            path: path.to_owned(),
            size_max: PEM_FILE_SIZE_MAX,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{TestResult, generate_pem};

    #[test]
    fn reads_certificate_and_pkcs8_key() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (cert_pem, key_pem) = generate_pem("mail.example.org")?;
        let cert_path = dir.path().join("cert.pem");
        let key_path = dir.path().join("key.pem");
        std::fs::write(&cert_path, cert_pem)?;
        std::fs::write(&key_path, key_pem)?;

        assert_eq!(read_certificates(&cert_path)?.len(), 1);
        assert!(matches!(read_private_key(&key_path)?, PrivateKeyDer::Pkcs8(_)));
        Ok(())
    }

    #[test]
    fn empty_files_name_what_is_missing() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not pem at all\n")?;

        let err = read_certificates(&path).err();
        assert!(matches!(err, Some(Error::NoCertificates { path: p }) if p == path));
        let err = read_private_key(&path).err();
        assert!(matches!(err, Some(Error::NoPrivateKey { path: p }) if p == path));
        Ok(())
    }

    #[test]
    fn missing_file_is_io_error_with_path() {
        let path = Path::new("/nonexistent/herald/cert.pem");
        let err = read_certificates(path).err();
        assert!(matches!(err, Some(Error::Io { path: p, .. }) if p == path));
    }

    #[test]
    fn truncated_pem_is_reported_as_malformed() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (cert_pem, _) = generate_pem("mail.example.org")?;
        let path = dir.path().join("cert.pem");
        let cut = cert_pem.len() / 2;
        std::fs::write(&path, &cert_pem[..cut])?;

        assert!(matches!(read_certificates(&path), Err(Error::Pem { .. })));
        Ok(())
    }

    #[test]
    fn oversized_file_is_refused() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("huge.pem");
        let file = File::create(&path)?;
        file.set_len(PEM_FILE_SIZE_MAX + 1)?;

        assert!(matches!(read_certificates(&path), Err(Error::TooLarge { .. })));
        Ok(())
    }
}
