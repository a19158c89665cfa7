//! Decoding named params into typed structs, once, at the edge.
//!
//! A missing or ill-typed parameter becomes `-32602 "<param> is required"`, naming the
//! parameter; empty strings count as missing for required string parameters. Inside an
//! object parameter (`caps`, `price`) the message says what is wrong with the key it names:
//! `"caps.day_tokens: invalid value: floating point `1.5`, expected a whole number of tokens,
//! 0 or more"`, `"price.cachedInput: unknown field …"`, `"price.input is required"`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::AppError;

/// Decodes `params` into `T`, naming the offending parameter on failure.
pub(crate) fn decode<T: DeserializeOwned>(params: Value) -> Result<T, AppError> {
    serde_path_to_error::deserialize(params).map_err(invalid)
}

/// The error of params that did not decode, naming the offending parameter.
pub(crate) fn invalid(error: serde_path_to_error::Error<serde_json::Error>) -> AppError {
    let path = error.path().to_string();
    let message = error.inner().to_string();
    let within = (path != ".").then_some(path);
    match (missing_field_name(&message), within) {
        (Some(field), None) => AppError::MissingParam(field),
        (Some(field), Some(object)) => AppError::MissingParam(format!("{object}.{field}")),
        (None, None) => AppError::MissingParam("params".into()),
        (None, Some(key)) if key.contains(['.', '[']) => {
            AppError::InvalidParam(format!("{key}: {message}"))
        }
        (None, Some(param)) => AppError::MissingParam(param),
    }
}

/// serde says "missing field `run`"; the parameter is the text between the backticks.
fn missing_field_name(message: &str) -> Option<String> {
    let named = message.strip_prefix("missing field `")?;
    let end = named.find('`')?;
    named.get(..end).map(str::to_string)
}

/// A required string parameter that must not be empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Required(pub String);

impl<'de> Deserialize<'de> for Required {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Err(serde::de::Error::custom("empty"));
        }
        Ok(Required(text))
    }
}

impl std::ops::Deref for Required {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

pub(crate) use crate::plugins::method::NoParams;

/// `limit` and `offset`, shared by the listing methods.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct Page {
    /// Rows at most; absent = all.
    #[serde(default)]
    pub limit: Option<u32>,
    /// Rows skipped.
    #[serde(default)]
    pub offset: Option<u32>,
}

/// A boolean flag that also accepts the reference's truthy values (1, "true").
pub(crate) fn truthy<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => flag,
        Some(Value::Number(number)) => number.as_f64().is_some_and(|n| n != 0.0),
        Some(Value::String(text)) => !text.is_empty() && text != "false" && text != "0",
        Some(Value::Array(_) | Value::Object(_)) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Example {
        run: Required,
        #[serde(default)]
        context_limit: Option<i64>,
        #[serde(default, deserialize_with = "truthy")]
        persist: bool,
    }

    #[test]
    fn missing_required_param_is_named() {
        let error = decode::<Example>(json!({})).unwrap_err();
        assert_eq!(error.to_string(), "run is required");
    }

    #[test]
    fn empty_or_ill_typed_param_is_named() {
        assert_eq!(
            decode::<Example>(json!({"run": ""}))
                .unwrap_err()
                .to_string(),
            "run is required"
        );
        assert_eq!(
            decode::<Example>(json!({"run": 5}))
                .unwrap_err()
                .to_string(),
            "run is required"
        );
        assert_eq!(
            decode::<Example>(json!({"run": "a", "contextLimit": "big"}))
                .unwrap_err()
                .to_string(),
            "contextLimit is required"
        );
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "only its decoding is tested")]
    struct Inner {
        name: String,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code, reason = "only its decoding is tested")]
    struct Outer {
        #[serde(default)]
        inner: Option<Inner>,
    }

    #[test]
    fn inside_an_object_param_the_message_says_what_is_wrong_with_the_key() {
        let message = |params: Value| decode::<Outer>(params).unwrap_err().to_string();
        assert_eq!(
            message(json!({"inner": {"name": true}})),
            "inner.name: invalid type: boolean `true`, expected a string"
        );
        assert_eq!(
            message(json!({"inner": {"name": "a", "extra": 2}})),
            "inner.extra: unknown field `extra`, expected `name`"
        );
        assert_eq!(message(json!({"inner": {}})), "inner.name is required");
        assert_eq!(message(json!({"inner": 5})), "inner is required");
    }

    #[test]
    fn flags_accept_truthy_values() {
        let example: Example =
            decode(json!({"run": "a", "persist": 1, "contextLimit": 2048})).unwrap();
        assert!(example.persist);
        assert_eq!((&*example.run, example.context_limit), ("a", Some(2048)));
        let example: Example = decode(json!({"run": "a", "persist": null})).unwrap();
        assert!(!example.persist);
    }
}
