//! The JSON-RPC 2.0 envelope: frames in, replies out.
//!
//! A frame holds one request or a batch. A request without an `id` member is a
//! notification and gets no reply; an `id` is echoed exactly as sent, falsy ones included.

use serde_json::{Map, Value};

use crate::error::{AppError, RpcError};

/// One decoded request, or why an element of the frame is not one.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A well-formed request.
    Request(Request),
    /// An element that is not a request object; answered with `id` (or null).
    Invalid {
        /// The element's `id`, when it had a usable one.
        id: Value,
        /// What is wrong with it.
        reason: String,
    },
}

/// A JSON-RPC request object.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification (no `id` member); otherwise the id as sent.
    pub id: Option<Value>,
    /// The method name.
    pub method: String,
    /// Named parameters; absent or null params become an empty object.
    pub params: Value,
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// One request object.
    Single(Incoming),
    /// An array of them; the replies go back as one array.
    Batch(Vec<Incoming>),
}

/// Decodes one text frame. `Err` is a parse error, answered with id null.
pub fn decode_frame(text: &str) -> Result<Frame, AppError> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| AppError::Parse(error.to_string()))?;
    match value {
        Value::Array(items) if items.is_empty() => Ok(Frame::Single(Incoming::Invalid {
            id: Value::Null,
            reason: "empty batch".into(),
        })),
        Value::Array(items) => Ok(Frame::Batch(
            items.into_iter().map(decode_request).collect(),
        )),
        other => Ok(Frame::Single(decode_request(other))),
    }
}

fn decode_request(value: Value) -> Incoming {
    let Value::Object(mut object) = value else {
        return Incoming::Invalid {
            id: Value::Null,
            reason: "a request must be an object".into(),
        };
    };
    let id = object.remove("id");
    if let Some(bad) = id.as_ref().filter(|id| !is_valid_id(id)) {
        return Incoming::Invalid {
            id: Value::Null,
            reason: format!("id must be a string, a number or null, not {bad}"),
        };
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Incoming::Invalid {
                id: id.unwrap_or(Value::Null),
                reason: "method must be a string".into(),
            }
        }
        None => {
            return Incoming::Invalid {
                id: id.unwrap_or(Value::Null),
                reason: "method is missing".into(),
            }
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(params @ Value::Object(_)) => params,
        Some(_) => {
            return Incoming::Invalid {
                id: id.unwrap_or(Value::Null),
                reason: "params must be an object of named parameters".into(),
            }
        }
    };
    Incoming::Request(Request { id, method, params })
}

fn is_valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

/// A success reply, keys in the reference order (`jsonrpc`, `result`, `id`).
pub fn success(id: Value, result: Value) -> Value {
    let mut reply = Map::new();
    reply.insert("jsonrpc".into(), Value::from("2.0"));
    reply.insert("result".into(), result);
    reply.insert("id".into(), id);
    Value::Object(reply)
}

/// An error reply.
pub fn failure(id: Value, error: &RpcError) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), Value::from(error.code));
    body.insert("message".into(), Value::from(error.message.clone()));
    let mut reply = Map::new();
    reply.insert("jsonrpc".into(), Value::from("2.0"));
    reply.insert("error".into(), Value::Object(body));
    reply.insert("id".into(), id);
    Value::Object(reply)
}

/// A server → client notification.
pub fn notification(method: &str, params: Value) -> Value {
    let mut message = Map::new();
    message.insert("jsonrpc".into(), Value::from("2.0"));
    message.insert("method".into(), Value::from(method));
    message.insert("params".into(), params);
    Value::Object(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_keeps_its_id_and_defaults_params() {
        let frame = decode_frame(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#).unwrap();
        assert_eq!(
            frame,
            Frame::Single(Incoming::Request(Request {
                id: Some(json!(0)),
                method: "ping".into(),
                params: json!({}),
            }))
        );
    }

    #[test]
    fn a_request_without_id_is_a_notification() {
        let Frame::Single(Incoming::Request(request)) =
            decode_frame(r#"{"method":"ping","params":null}"#).unwrap()
        else {
            panic!("expected a request");
        };
        assert_eq!(request.id, None);
    }

    #[test]
    fn not_json_is_a_parse_error() {
        assert!(matches!(decode_frame("hello"), Err(AppError::Parse(_))));
    }

    #[test]
    fn batches_decode_element_by_element() {
        let Frame::Batch(items) =
            decode_frame(r#"[{"id":1,"method":"ping"}, 5, {"id":"x","method":7}]"#).unwrap()
        else {
            panic!("expected a batch");
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(items[0], Incoming::Request(_)));
        assert!(matches!(
            &items[1],
            Incoming::Invalid {
                id: Value::Null,
                ..
            }
        ));
        assert!(matches!(&items[2], Incoming::Invalid { id, .. } if id == &json!("x")));
    }

    #[test]
    fn an_empty_batch_is_invalid() {
        assert!(matches!(
            decode_frame("[]").unwrap(),
            Frame::Single(Incoming::Invalid { .. })
        ));
    }

    #[test]
    fn positional_params_and_object_ids_are_invalid() {
        assert!(matches!(
            decode_frame(r#"{"id":1,"method":"ping","params":[1]}"#).unwrap(),
            Frame::Single(Incoming::Invalid { .. })
        ));
        assert!(matches!(
            decode_frame(r#"{"id":{},"method":"ping"}"#).unwrap(),
            Frame::Single(Incoming::Invalid { .. })
        ));
    }

    #[test]
    fn replies_keep_the_reference_key_order() {
        let text = serde_json::to_string(&success(json!(""), json!({}))).unwrap();
        assert_eq!(text, r#"{"jsonrpc":"2.0","result":{},"id":""}"#);
        let error = RpcError {
            code: -32601,
            message: "Method 'x' not found.".into(),
        };
        let text = serde_json::to_string(&failure(json!(3), &error)).unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method 'x' not found."},"id":3}"#
        );
    }
}
