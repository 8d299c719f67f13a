//! Resend's OpenAPI document (`compat/openapi/resend-openapi.yaml`, with the overlay of
//! `compat/openapi/overlay.yaml` applied) as the judge of the webhook payloads herald
//! sends: the webhook receiver checks every body it records against the document's
//! `webhooks:` schema for the body's `type`. Event kinds the document has no schema for
//! (herald's `topic.*`, `suppression.*`, `contact.topics.updated`) are not checked.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The document's webhook schemas, compiled once per test binary.
pub struct WebhookSchemas {
    validators: BTreeMap<String, jsonschema::Validator>,
}

/// The schemas, loaded on first use; panics with the reason if the document or the
/// overlay cannot be read.
pub fn webhook_schemas() -> &'static WebhookSchemas {
    static SCHEMAS: OnceLock<WebhookSchemas> = OnceLock::new();
    SCHEMAS.get_or_init(WebhookSchemas::load)
}

impl WebhookSchemas {
    fn load() -> WebhookSchemas {
        let document = document();
        let webhooks = document["webhooks"]
            .as_object()
            .expect("the document has a webhooks: section");
        let validators = webhooks
            .iter()
            .map(|(kind, item)| {
                let reference = item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                    .as_str()
                    .unwrap_or_else(|| panic!("webhook {kind} has no schema reference"));
                // The event's schema, with the document's components beside it so that
                // its references resolve. OpenAPI 3.1 schemas are JSON Schema 2020-12.
                let root = json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$ref": reference,
                    "components": document["components"],
                });
                let validator = jsonschema::options()
                    .should_validate_formats(true)
                    .build(&root)
                    .unwrap_or_else(|e| panic!("webhook {kind}'s schema {reference} does not compile: {e}"));
                (kind.clone(), validator)
            })
            .collect();
        WebhookSchemas { validators }
    }

    /// The event kinds the document has a schema for.
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.validators.keys().map(String::as_str)
    }

    /// What is wrong with `payload` under the schema for its `type`: `None` when the
    /// document has no schema for that type, else every violation (empty when valid).
    pub fn violations(&self, payload: &Value) -> Option<Vec<String>> {
        let validator = self.validators.get(payload["type"].as_str()?)?;
        Some(
            validator
                .iter_errors(payload)
                .map(|error| format!("{} at {}", error, error.instance_path()))
                .collect(),
        )
    }
}

/// The document with the overlay applied.
fn document() -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/openapi");
    let read = |name: &str| -> Value {
        let text =
            std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("read compat/openapi/{name}: {e}"));
        serde_norway::from_str(&text).unwrap_or_else(|e| panic!("compat/openapi/{name} is not YAML: {e}"))
    };
    let mut document = read("resend-openapi.yaml");
    apply_overlay(&mut document, &read("overlay.yaml"));
    document
}

/// Applies an OpenAPI Overlay 1.0 document the way `compat/openapi/overlay.py` does, for
/// the subset of JSONPath that file allows (`$` then `.name` or `['name']` segments).
fn apply_overlay(document: &mut Value, overlay: &Value) {
    for action in overlay["actions"].as_array().into_iter().flatten() {
        let target = action["target"].as_str().expect("an overlay action has a target");
        let names = path_segments(target);
        let (last, parents) = names
            .split_last()
            .unwrap_or_else(|| panic!("overlay target {target} is the whole document"));
        let parent = parents.iter().fold(&mut *document, |node, name| {
            node.get_mut(name.as_str())
                .unwrap_or_else(|| panic!("overlay target {target} matches nothing"))
        });
        let map = parent
            .as_object_mut()
            .unwrap_or_else(|| panic!("overlay target {target} is inside a non-object"));
        if action["remove"] == Value::Bool(true) {
            map.remove(last)
                .unwrap_or_else(|| panic!("overlay target {target} matches nothing"));
        } else {
            let node = map
                .get_mut(last)
                .unwrap_or_else(|| panic!("overlay target {target} matches nothing"));
            merge(node, &action["update"]);
        }
    }
}

/// Overlay 1.0's update: objects merge recursively, arrays are appended to, anything else
/// is replaced.
fn merge(target: &mut Value, update: &Value) {
    let (Some(target), Some(update)) = (target.as_object_mut(), update.as_object()) else {
        panic!("an overlay update applies to an object");
    };
    for (key, value) in update {
        match (target.get_mut(key), value) {
            (Some(existing @ Value::Object(_)), Value::Object(_)) => merge(existing, value),
            (Some(Value::Array(existing)), Value::Array(more)) => existing.extend(more.iter().cloned()),
            _ => {
                target.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The names in a target such as `$.components.schemas['Email'].properties`.
fn path_segments(target: &str) -> Vec<String> {
    let mut rest = target
        .strip_prefix('$')
        .unwrap_or_else(|| panic!("overlay target {target} does not start with $"));
    let mut names = Vec::new();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix("['") {
            let end = quoted
                .find("']")
                .unwrap_or_else(|| panic!("overlay target {target}: unclosed ['"));
            names.push(quoted[..end].to_owned());
            rest = &quoted[end + 2..];
        } else if let Some(dotted) = rest.strip_prefix('.') {
            let end = dotted.find(['.', '[']).unwrap_or(dotted.len());
            names.push(dotted[..end].to_owned());
            rest = &dotted[end..];
        } else {
            panic!("overlay target {target}: only .name and ['name'] segments are supported");
        }
    }
    names
}
