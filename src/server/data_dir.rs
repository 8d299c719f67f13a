//! The data directory: created private to herald.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use anyhow::Context as _;

/// Creates `dir` (mode 0700) when missing, and tightens an existing one that others can
/// read: it holds the spool, private keys and the bootstrap API key.
pub fn prepare(dir: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the data directory {} (`server.data_dir`)", dir.display()))?;
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private (mode 0700)", dir.display()))?;
    }
    Ok(())
}
