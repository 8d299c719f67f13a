//! The self-signed fallback certificate, generated once per data directory.
//!
//! Without any certificate, herald could not offer STARTTLS at all, and most sending MTAs
//! would then deliver in plaintext. A self-signed certificate gives them encryption (they
//! rarely authenticate MX hosts), so it is generated on first start and kept: regenerating
//! on every start would change the key that clients may have pinned or logged.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

use crate::{CertKeyPaths, Error};

/// The directory under the data directory that holds generated TLS files.
const DIR_NAME: &str = "tls";
const CERT_FILE_NAME: &str = "self-signed-cert.pem";
const KEY_FILE_NAME: &str = "self-signed-key.pem";

/// Only the herald user may list or read the generated key.
const DIR_MODE: u32 = 0o700;
const KEY_MODE: u32 = 0o600;
/// The certificate is public; it only shares a directory with the key.
const CERT_MODE: u32 = 0o644;

/// Returns the paths of the self-signed pair under `data_dir`, generating it for
/// `hostname` (and `localhost`) first if either file is missing.
pub(crate) fn ensure(data_dir: &Path, hostname: &str) -> Result<CertKeyPaths, Error> {
    let dir = data_dir.join(DIR_NAME);
    let paths = CertKeyPaths {
        cert: dir.join(CERT_FILE_NAME),
        key: dir.join(KEY_FILE_NAME),
    };
    create_private_dir(&dir)?;
    if paths.cert.is_file() && paths.key.is_file() {
        return Ok(paths);
    }

    let (cert_pem, key_pem) = generate(hostname)?;
    // The key goes first: the certificate's presence is what marks the pair complete, so a
    // crash in between leaves a state that the next start regenerates.
    write_atomically(&paths.key, key_pem.as_bytes(), KEY_MODE)?;
    write_atomically(&paths.cert, cert_pem.as_bytes(), CERT_MODE)?;
    sync_dir(&dir)?;
    tracing::info!(
        cert = %paths.cert.display(),
        hostname,
        "generated a self-signed TLS certificate; configure a CA-issued one for authenticated TLS"
    );
    Ok(paths)
}

/// Generates a certificate and key, both PEM, for `hostname` and `localhost`.
fn generate(hostname: &str) -> Result<(String, String), Error> {
    let mut names = vec![hostname.to_owned()];
    if !hostname.eq_ignore_ascii_case("localhost") {
        names.push("localhost".to_owned());
    }
    let mut params = CertificateParams::new(names)?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, hostname);
    params.distinguished_name = subject;
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn create_private_dir(dir: &Path) -> Result<(), Error> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|source| Error::io(dir, source))?;
    // The directory may predate us with a looser mode (umask, an operator's mkdir), and
    // DirBuilder leaves existing directories alone.
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(|source| Error::io(dir, source))
}

/// Writes `contents` to `path` through a temporary file in the same directory and a
/// rename, so a reader (or a crash) never sees a half-written file.
fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<(), Error> {
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(".tmp");
    let temp = Path::new(&temp_name);
    // A leftover from a crashed start is stale by definition: the pair was not completed.
    match fs::remove_file(temp) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(Error::io(temp, source)),
    }
    // create_new with the final mode means the key is never readable by others, not even
    // between creation and a later chmod.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(temp)
        .map_err(|source| Error::io(temp, source))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|source| Error::io(temp, source))?;
    drop(file);
    fs::rename(temp, path).map_err(|source| Error::io(path, source))
}

/// Makes the renames durable: without it, a power cut can lose the directory entries
/// even though the file contents were synced.
fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|source| Error::io(dir, source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::TestResult;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};

    fn mode(path: &Path) -> std::io::Result<u32> {
        Ok(fs::metadata(path)?.permissions().mode() & 0o777)
    }

    #[test]
    fn generates_once_then_reuses_the_same_files() -> TestResult {
        let data = tempfile::tempdir()?;
        let first = ensure(data.path(), "mx.example.org")?;
        let cert = fs::read(&first.cert)?;
        let key = fs::read(&first.key)?;

        let second = ensure(data.path(), "mx.example.org")?;
        assert_eq!(first, second);
        assert_eq!(fs::read(&second.cert)?, cert);
        assert_eq!(fs::read(&second.key)?, key);
        Ok(())
    }

    #[test]
    fn key_and_directory_are_private() -> TestResult {
        let data = tempfile::tempdir()?;
        let paths = ensure(data.path(), "mx.example.org")?;
        assert_eq!(paths.key, data.path().join("tls/self-signed-key.pem"));
        assert_eq!(paths.cert, data.path().join("tls/self-signed-cert.pem"));
        assert_eq!(mode(&paths.key)?, 0o600);
        assert_eq!(mode(&data.path().join(DIR_NAME))?, 0o700);
        Ok(())
    }

    #[test]
    fn existing_loose_directory_is_tightened() -> TestResult {
        let data = tempfile::tempdir()?;
        let dir = data.path().join(DIR_NAME);
        fs::create_dir(&dir)?;
        fs::set_permissions(&dir, Permissions::from_mode(0o755))?;
        ensure(data.path(), "mx.example.org")?;
        assert_eq!(mode(&dir)?, 0o700);
        Ok(())
    }

    #[test]
    fn certificate_names_hostname_and_localhost() -> TestResult {
        let data = tempfile::tempdir()?;
        let paths = ensure(data.path(), "mx.example.org")?;
        let der = CertificateDer::from_pem_file(&paths.cert)?;
        let cert = webpki::EndEntityCert::try_from(&der)?;
        for name in ["mx.example.org", "localhost"] {
            cert.verify_is_valid_for_subject_name(&ServerName::try_from(name)?)?;
        }
        Ok(())
    }

    #[test]
    fn half_written_pair_is_regenerated() -> TestResult {
        let data = tempfile::tempdir()?;
        let first = ensure(data.path(), "mx.example.org")?;
        let old_key = fs::read(&first.key)?;
        fs::remove_file(&first.cert)?;

        let second = ensure(data.path(), "mx.example.org")?;
        assert!(second.cert.is_file());
        assert_ne!(fs::read(&second.key)?, old_key);
        Ok(())
    }
}
