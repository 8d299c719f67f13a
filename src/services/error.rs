//! Why a service operation refuses: the one error type every adapter translates into its
//! own answer (a REST error body, an SMTP reply, a dashboard message).

/// A refusal or a failure of a service operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input cannot be accepted; `name` is the Resend error name a REST client gets
    /// (`validation_error`, `invalid_access`, `invalid_region`, ...).
    #[error("{message}")]
    Invalid {
        /// The Resend error name.
        name: &'static str,
        /// What is wrong, for a person.
        message: String,
    },
    /// A required field is missing or empty.
    #[error("Missing `{0}` field.")]
    MissingField(&'static str),
    /// The resource does not exist for this caller; the text names it (`"Domain not
    /// found"`).
    #[error("{0}")]
    NotFound(&'static str),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The caller's key may only send email.
    #[error("This API key is restricted to only send emails")]
    Restricted,
    /// The resource already exists.
    #[error("{0}")]
    Conflict(String),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] crate::storage::Error),
    /// A fault on herald's side that the caller cannot fix; the text is for the log.
    #[error("{0}")]
    Internal(&'static str),
}

impl From<herald_queue::Error> for Error {
    fn from(error: herald_queue::Error) -> Error {
        Error::Store(error.into())
    }
}

impl Error {
    /// [`Error::Invalid`] named `validation_error`.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::Invalid {
            name: "validation_error",
            message: message.into(),
        }
    }
}

/// A resource id from `text` (a path segment or a body field); `what` names the resource
/// in the refusal.
pub fn parse_id(text: &str, what: &str) -> Result<herald_queue::Id, Error> {
    text.trim().parse().map_err(|_| Error::Invalid {
        name: "invalid_parameter",
        message: format!("The {what} id must be a valid UUID, got {text:?}"),
    })
}

/// A trimmed, non-empty text of at most `max` characters without control characters,
/// from the optional `value` of the field `field`.
pub fn required_text(value: Option<String>, field: &'static str, max: usize) -> Result<String, Error> {
    let Some(value) = value else {
        return Err(Error::MissingField(field));
    };
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(Error::MissingField(field));
    }
    if value.chars().count() > max {
        return Err(Error::invalid(format!(
            "The `{field}` field must be at most {max} characters"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "The `{field}` field must not contain control characters"
        )));
    }
    Ok(value)
}
