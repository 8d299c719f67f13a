//! Multipart uploads streamed to a file (`POST /contacts/imports`): a CSV of a million
//! contacts is hundreds of megabytes, which every other route would read into memory.
//! The file part goes to disk a chunk at a time, synced before the request is answered;
//! the other form fields are small and read whole, within limits.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::StreamExt;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request};
use tokio::io::AsyncWriteExt;

use super::{ApiError, ApiRequest};

/// Longest form field other than the file, in bytes: JSON of a column map, segment and
/// topic lists.
pub const FIELD_MAX: u64 = 64 * 1024;

/// Most form fields other than the file.
pub const FIELDS_MAX: usize = 16;

/// Most bytes received and not yet handed out as field data: the multipart framing (a
/// preamble, boundaries, part headers) and what the parser holds while it looks for the
/// end of a part's headers. Without it, a body that never finishes a part header would
/// be buffered whole.
pub const FRAMING_MAX: u64 = 2 * 1024 * 1024;

/// Longest wait for the next bytes of an upload.
pub const IDLE_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// The error that stops a body whose framing passes [`FRAMING_MAX`].
#[derive(Debug, thiserror::Error)]
#[error("more than {FRAMING_MAX} bytes of multipart framing")]
struct Unframed;

/// The form part that carries the file.
const FILE_FIELD: &str = "file";

/// An upload on disk and the form's other fields. The file is removed when this drops,
/// unless the handler moved it elsewhere first.
#[derive(Debug)]
pub struct Upload {
    /// Where the file part was written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The other fields, in order.
    pub fields: Vec<(String, String)>,
}

impl Upload {
    /// The form field `name`.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether `method` and `path` take a streamed upload.
pub fn is_upload(method: &Method, path: &str) -> bool {
    method == Method::POST && path.trim_end_matches('/') == "/contacts/imports"
}

/// Reads `request`, a `multipart/form-data` body of at most `limit` bytes
/// (`[contacts] import_size_max`), writing its file part into `dir`.
pub async fn read(request: Request<Incoming>, dir: &Path, limit: u64) -> Result<ApiRequest, ApiError> {
    let (parts, body) = request.into_parts();
    let too_large = || {
        ApiError::too_large_because(format!(
            "The upload exceeds {limit} bytes, the largest import this server takes ([contacts] import_size_max)"
        ))
    };
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok())
        .and_then(|length| length.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let content_type = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::validation(format!(
            "{} takes multipart/form-data with the CSV in a `{FILE_FIELD}` part, got Content-Type {content_type:?}",
            parts.uri.path()
        ))
    })?;
    let received = Arc::new(AtomicU64::new(0));
    let delivered = Arc::new(AtomicU64::new(0));
    let (seen, used) = (Arc::clone(&received), Arc::clone(&delivered));
    let stream = Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX))
        .into_data_stream()
        .map(move |chunk| {
            let chunk = chunk?;
            let total = seen.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
            if total.saturating_sub(used.load(Ordering::Relaxed)) > FRAMING_MAX {
                return Err(Box::new(Unframed) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(chunk)
        });
    let constraints = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .whole_stream(limit)
            .for_field(FILE_FIELD, limit)
            .per_field(FIELD_MAX),
    );
    let mut form = multer::Multipart::with_constraints(stream, boundary, constraints);
    let mut upload = Upload {
        path: dir.join(format!("upload-{}.part", uuid::Uuid::now_v7())),
        bytes: 0,
        fields: Vec::new(),
    };
    let mut file: Option<tokio::fs::File> = None;
    let failed = |error: multer::Error| match error {
        multer::Error::FieldSizeExceeded { field_name, .. } if field_name.as_deref() != Some(FILE_FIELD) => {
            ApiError::too_large_because(format!(
                "The form field {:?} exceeds {FIELD_MAX} bytes",
                field_name.unwrap_or_default()
            ))
        }
        multer::Error::FieldSizeExceeded { .. } | multer::Error::StreamSizeExceeded { .. } => too_large(),
        multer::Error::StreamReadFailed(error)
            if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() =>
        {
            too_large()
        }
        multer::Error::StreamReadFailed(error) if error.is::<Unframed>() => ApiError::validation(format!(
            "The upload is not valid multipart/form-data: more than {FRAMING_MAX} bytes arrived outside any field"
        )),
        multer::Error::StreamReadFailed(error) => ApiError::bad_request(format!("Could not read the upload: {error}")),
        other => ApiError::validation(format!("The upload is not valid multipart/form-data: {other}")),
    };
    while let Some(mut field) = stalled(form.next_field()).await?.map_err(failed)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == FILE_FIELD {
            if file.is_some() {
                return Err(ApiError::validation(
                    "The upload has two `file` parts; send one CSV file",
                ));
            }
            let out = file.insert(create(dir, &upload.path).await?);
            while let Some(chunk) = stalled(field.chunk()).await?.map_err(failed)? {
                upload.bytes += chunk.len() as u64;
                delivered.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                out.write_all(&chunk).await.map_err(|e| disk(&e))?;
            }
        } else {
            if upload.fields.len() >= FIELDS_MAX {
                return Err(ApiError::validation(format!(
                    "The upload has more than {FIELDS_MAX} form fields"
                )));
            }
            let text = stalled(field.text()).await?.map_err(failed)?;
            delivered.fetch_add(text.len() as u64, Ordering::Relaxed);
            upload.fields.push((name, text));
        }
    }
    let Some(mut out) = file else {
        return Err(ApiError::missing_field(FILE_FIELD));
    };
    // Synced before the import is recorded: an acknowledged import never loses its file.
    out.flush().await.map_err(|e| disk(&e))?;
    out.sync_all().await.map_err(|e| disk(&e))?;
    let mut summary = serde_json::Map::new();
    summary.insert(FILE_FIELD.into(), serde_json::json!({ "bytes": upload.bytes }));
    for (name, value) in &upload.fields {
        summary.insert(name.clone(), serde_json::Value::String(value.clone()));
    }
    let body = Bytes::from(serde_json::Value::Object(summary).to_string());
    Ok(ApiRequest::from_parts(parts, body, Some(upload)))
}

/// `step`, or a refusal when the client sends nothing for [`IDLE_MAX`]: a stalled
/// upload must not hold one of the few upload slots for ever.
async fn stalled<T>(step: impl std::future::Future<Output = T>) -> Result<T, ApiError> {
    tokio::time::timeout(IDLE_MAX, step).await.map_err(|_| {
        ApiError::bad_request(format!(
            "The upload stalled: nothing arrived for {} s",
            IDLE_MAX.as_secs()
        ))
    })
}

async fn create(dir: &Path, path: &Path) -> Result<tokio::fs::File, ApiError> {
    tokio::fs::create_dir_all(dir).await.map_err(|e| disk(&e))?;
    tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .await
        .map_err(|e| disk(&e))
}

fn disk(error: &std::io::Error) -> ApiError {
    tracing::error!(%error, "cannot write an upload to the data directory");
    ApiError::unavailable("The server cannot store the upload now; try again later")
}

/// Reads a contact import's upload (`POST /contacts/imports`, or the dashboard's form)
/// once its sender is known: at most `[contacts] uploads_max` at once, and only when the
/// disk has room for it above `[spool] min_free_space`.
pub async fn read_import(state: &crate::server::AppState, request: Request<Incoming>) -> Result<ApiRequest, ApiError> {
    let config = state.config();
    let Ok(_permit) = state.uploads.try_acquire() else {
        return Err(ApiError::unavailable(format!(
            "{} contact imports are being uploaded, the most at once ([contacts] uploads_max); try again shortly",
            config.contacts.uploads_max
        )));
    };
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok())
        .and_then(|length| length.parse::<u64>().ok());
    let needed = declared.unwrap_or(config.contacts.import_size_max);
    let health = state.node().health();
    if health.disk_available < health.disk_minimum.saturating_add(needed) {
        return Err(ApiError::unavailable(format!(
            "The server's disk has no room for an upload of {needed} bytes above its free-space minimum ([spool] min_free_space)"
        )));
    }
    let dir = crate::contacts::imports::directory(&config.server.data_dir);
    read(request, &dir, config.contacts.import_size_max).await
}
