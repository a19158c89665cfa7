//! The JSON-RPC 2.0 envelope: frames in, replies out.
//!
//! A frame holds one request or a batch. A request without an `id` member is a
//! notification and gets no reply; an `id` is echoed exactly as sent, falsy ones included
//! (numbers keep their digits: serde_json's `arbitrary_precision` is on, so an id past
//! `u64` does not come back as a rounded float).

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{AppError, RpcError};

/// One decoded request, or why an element of the frame is not one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
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
pub(crate) struct Request {
    /// `None` for a notification (no `id` member); otherwise the id as sent.
    pub id: Option<Value>,
    pub method: String,
    /// Named parameters; absent or null params become an empty object.
    pub params: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Frame {
    /// One request object.
    Single(Incoming),
    /// An array of them; the replies go back as one array.
    Batch(Vec<Incoming>),
}

/// Decodes one text frame. `Err` is a parse error, answered with id null.
///
/// The frame is split into its elements before any element is read as a value, so an
/// element serde_json cannot hold (nested deeper than its recursion limit, say) costs only
/// its own reply, answered with its id when that can be read; the rest of a batch is served.
pub(crate) fn decode_frame(text: &str) -> Result<Frame, AppError> {
    let parse_error = |error: serde_json::Error| AppError::Parse(error.to_string());
    if !text.trim_start().starts_with('[') {
        let element: &RawValue = serde_json::from_str(text).map_err(parse_error)?;
        return Ok(Frame::Single(decode_request(element)));
    }
    let elements: Vec<&RawValue> = serde_json::from_str(text).map_err(parse_error)?;
    if elements.is_empty() {
        return Ok(Frame::Single(Incoming::Invalid {
            id: Value::Null,
            reason: "empty batch".into(),
        }));
    }
    Ok(Frame::Batch(
        elements.into_iter().map(decode_request).collect(),
    ))
}

fn decode_request(element: &RawValue) -> Incoming {
    let invalid = |id: Option<Value>, reason: String| Incoming::Invalid {
        id: id.unwrap_or(Value::Null),
        reason,
    };
    // Members stay raw text until each is read on its own; a repeated key keeps its last value.
    let Ok(mut members) = serde_json::from_str::<HashMap<String, &RawValue>>(element.get()) else {
        return invalid(None, "a request must be an object".into());
    };
    let id = match members
        .remove("id")
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        None => None,
        Some(Ok(id)) if is_valid_id(&id) => Some(id),
        Some(Ok(bad)) => {
            return invalid(
                None,
                format!("id must be a string, a number or null, not {bad}"),
            )
        }
        Some(Err(error)) => return invalid(None, format!("id is not usable: {error}")),
    };
    let method = match members
        .remove("method")
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        Some(Ok(Value::String(method))) => method,
        Some(_) => return invalid(id, "method must be a string".into()),
        None => return invalid(id, "method is missing".into()),
    };
    let params = match members
        .remove("params")
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        None | Some(Ok(Value::Null)) => Value::Object(Map::new()),
        Some(Ok(params @ Value::Object(_))) => params,
        Some(Ok(_)) => return invalid(id, "params must be an object of named parameters".into()),
        Some(Err(error)) => return invalid(id, format!("params are not usable: {error}")),
    };
    Incoming::Request(Request { id, method, params })
}

fn is_valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

/// A success reply, keys in the reference order (`jsonrpc`, `result`, `id`).
pub(crate) fn success(id: Value, result: Value) -> Value {
    let mut reply = Map::new();
    reply.insert("jsonrpc".into(), Value::from("2.0"));
    reply.insert("result".into(), result);
    reply.insert("id".into(), id);
    Value::Object(reply)
}

/// An error reply.
pub(crate) fn failure(id: Value, error: &RpcError) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), Value::from(error.code.get()));
    body.insert("message".into(), Value::from(error.message.clone()));
    if let Some(data) = &error.data {
        body.insert("data".into(), data.clone());
    }
    let mut reply = Map::new();
    reply.insert("jsonrpc".into(), Value::from("2.0"));
    reply.insert("error".into(), Value::Object(body));
    reply.insert("id".into(), id);
    Value::Object(reply)
}

/// The frames that carry `replies`: one per reply, or one array for a batch. A reply
/// longer than `limit` bytes (the peer is assumed to accept frames as large as we do) is
/// replaced by a [`AppError::ReplyTooLarge`] error with its id; in a batch the longest
/// replies are replaced first until the array fits, so every id still gets its answer.
pub(crate) fn encode_replies(replies: Vec<Value>, batch: bool, limit: usize) -> Vec<String> {
    let mut encoded: Vec<Encoded> = replies
        .into_iter()
        .map(|reply| Encoded {
            text: reply.to_string(),
            reply,
            replaced: false,
        })
        .collect();
    if !batch {
        return encoded
            .into_iter()
            .map(|entry| match entry.text.len() > limit {
                true => too_large(&entry.reply, entry.text.len(), limit),
                false => entry.text,
            })
            .collect();
    }
    let framed = |encoded: &[Encoded]| -> usize {
        encoded
            .iter()
            .map(|entry| entry.text.len() + 1)
            .sum::<usize>()
            + 1
    };
    while framed(&encoded) > limit {
        let Some(longest) = encoded
            .iter_mut()
            .filter(|entry| !entry.replaced)
            .max_by_key(|entry| entry.text.len())
        else {
            break;
        };
        longest.text = too_large(&longest.reply, longest.text.len(), limit);
        longest.replaced = true;
    }
    if encoded.is_empty() {
        return Vec::new();
    }
    let texts: Vec<String> = encoded.into_iter().map(|entry| entry.text).collect();
    vec![format!("[{}]", texts.join(","))]
}

/// One reply of a batch and its text, which may have become the too-large error.
struct Encoded {
    reply: Value,
    text: String,
    replaced: bool,
}

fn too_large(reply: &Value, bytes: usize, limit: usize) -> String {
    let id = reply.get("id").cloned().unwrap_or(Value::Null);
    failure(id, &AppError::ReplyTooLarge { bytes, limit }.to_rpc()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::error::code;

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
    fn an_element_too_deep_to_read_costs_only_its_own_reply() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(
            r#"[{{"id":1,"method":"ping","params":{{"x":{deep}}}}},{{"id":2,"method":"ping"}}]"#
        );
        let Frame::Batch(items) = decode_frame(&text).unwrap() else {
            panic!("expected a batch");
        };
        assert!(matches!(&items[0], Incoming::Invalid { id, .. } if id == &json!(1)));
        assert!(matches!(&items[1], Incoming::Request(request) if request.id == Some(json!(2))));
    }

    #[test]
    fn numeric_ids_keep_their_digits() {
        for id in [
            "18446744073709551617",
            "-0",
            "1.5",
            "123456789012345678901234567890",
        ] {
            let text = format!(r#"{{"id":{id},"method":"ping"}}"#);
            let Frame::Single(Incoming::Request(request)) = decode_frame(&text).unwrap() else {
                panic!("expected a request");
            };
            let reply = success(request.id.unwrap(), json!({}));
            assert_eq!(
                reply.to_string(),
                format!(r#"{{"jsonrpc":"2.0","result":{{}},"id":{id}}}"#)
            );
        }
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let Frame::Single(Incoming::Request(request)) =
            decode_frame(r#"{"id":1,"method":"nope","id":2,"method":"ping"}"#).unwrap()
        else {
            panic!("expected a request");
        };
        assert_eq!(
            (request.id, request.method.as_str()),
            (Some(json!(2)), "ping")
        );
    }

    #[test]
    fn replies_past_the_frame_limit_become_errors_with_their_ids() {
        let big = success(json!(1), json!("x".repeat(500)));
        let small = success(json!(2), json!({}));
        let single = encode_replies(vec![big.clone()], false, 200);
        let error: Value = serde_json::from_str(&single[0]).unwrap();
        assert_eq!(
            (error["id"].clone(), error["error"]["code"].clone()),
            (json!(1), json!(-32007))
        );
        let batch = encode_replies(vec![big, small.clone()], true, 400);
        let replies: Value = serde_json::from_str(&batch[0]).unwrap();
        assert_eq!(replies[0]["error"]["code"], json!(-32007));
        assert_eq!(replies[1], small);
        assert!(encode_replies(Vec::new(), true, 400).is_empty());
    }

    #[test]
    fn an_error_reply_carries_data_after_the_message_when_it_has_some() {
        let error = RpcError {
            code: code::WORK_LIMIT,
            message: "stopped".into(),
            data: Some(json!({"limit": "steps"})),
        };
        let text = serde_json::to_string(&failure(json!(1), &error)).unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","error":{"code":-32008,"message":"stopped","data":{"limit":"steps"}},"id":1}"#
        );
    }

    #[test]
    fn replies_keep_the_reference_key_order() {
        let text = serde_json::to_string(&success(json!(""), json!({}))).unwrap();
        assert_eq!(text, r#"{"jsonrpc":"2.0","result":{},"id":""}"#);
        let error = RpcError {
            code: code::METHOD_NOT_FOUND,
            message: "Method 'x' not found.".into(),
            data: None,
        };
        let text = serde_json::to_string(&failure(json!(3), &error)).unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method 'x' not found."},"id":3}"#
        );
    }
}
