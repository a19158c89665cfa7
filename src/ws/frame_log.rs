//! What the frame log (`RUMMY_DEBUG`) writes of a frame: the frame itself, with the params
//! that carry a secret (a person's provider key, an admin-set provider key, a host or MCP
//! credential) and the tokens a reply hands out (`people/add`, `people/token`,
//! `tokens/mint`) replaced, so that no secret reaches the log. An inbound frame that is not
//! JSON is logged by its length only: it cannot be told apart from a `keys/set` whose key
//! would follow.

use std::borrow::Cow;

use serde_json::Value;

/// The methods whose params carry a secret, and which param.
const SECRET_PARAMS: &[(&str, &str)] = &[
    ("keys/set", "key"),
    ("addModel", "apiKey"),
    ("hostCredentials/set", "value"),
    ("mcpCredentials/set", "value"),
];

/// The field of a reply's result that carries a token it hands out.
const SECRET_RESULT: &str = "token";

/// What the log shows in a secret's place.
const HIDDEN: &str = "<not logged>";

/// `text`, an inbound frame, as the frame log may write it.
pub(crate) fn inbound(text: &str) -> Cow<'_, str> {
    let Ok(mut frame) = serde_json::from_str::<Value>(text) else {
        return Cow::Owned(format!("<{} bytes, not JSON>", text.len()));
    };
    let hidden = match &mut frame {
        Value::Array(items) => {
            let mut hidden = false;
            for item in items {
                hidden |= hide(item);
            }
            hidden
        }
        item => hide(item),
    };
    if hidden {
        Cow::Owned(frame.to_string())
    } else {
        Cow::Borrowed(text)
    }
}

/// `text`, an outbound frame (a reply or a notification), as the frame log may write it.
pub(crate) fn outbound(text: &str) -> Cow<'_, str> {
    if !text.contains(SECRET_RESULT) {
        return Cow::Borrowed(text);
    }
    let Ok(mut frame) = serde_json::from_str::<Value>(text) else {
        return Cow::Owned(format!("<{} bytes, not JSON>", text.len()));
    };
    let hidden = match &mut frame {
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |hidden, item| hide_result(item) | hidden),
        item => hide_result(item),
    };
    if hidden {
        Cow::Owned(frame.to_string())
    } else {
        Cow::Borrowed(text)
    }
}

/// Replaces the token of `item`'s result when it has one; whether it did.
fn hide_result(item: &mut Value) -> bool {
    match item
        .get_mut("result")
        .and_then(|result| result.get_mut(SECRET_RESULT))
    {
        Some(secret @ Value::String(_)) => {
            *secret = Value::from(HIDDEN);
            true
        }
        _ => false,
    }
}

/// Replaces the secret param of `item` when its method has one; whether it did.
fn hide(item: &mut Value) -> bool {
    let Some(method) = item.get("method").and_then(Value::as_str) else {
        return false;
    };
    let Some(&(_, param)) = SECRET_PARAMS.iter().find(|(name, _)| *name == method) else {
        return false;
    };
    match item
        .get_mut("params")
        .and_then(|params| params.get_mut(param))
    {
        Some(secret) => {
            *secret = Value::from(HIDDEN);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_param_is_hidden_alone_and_in_a_batch_even_with_escaped_slashes() {
        let single = r#"{"jsonrpc":"2.0","id":1,"method":"keys\/set","params":{"provider":"openai","key":"sk-1"}}"#;
        let logged = inbound(single);
        assert!(
            !logged.contains("sk-1") && logged.contains("openai"),
            "{logged}"
        );
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"addModel","params":{"alias":"m","provider":"xai","apiKey":"xai-9"}}]"#;
        let logged = inbound(batch);
        assert!(
            !logged.contains("xai-9") && logged.contains("ping"),
            "{logged}"
        );
    }

    #[test]
    fn a_token_a_reply_hands_out_is_hidden_and_other_replies_are_logged_as_they_are() {
        let minted = r#"{"jsonrpc":"2.0","id":3,"result":{"name":"laptop","token":"rpat_1f2e"}}"#;
        let logged = outbound(minted);
        assert!(
            !logged.contains("rpat_1f2e") && logged.contains("laptop"),
            "{logged}"
        );
        let batch = r#"[{"jsonrpc":"2.0","id":4,"result":{"name":"olga","token":"9a8b"}}]"#;
        assert!(!outbound(batch).contains("9a8b"));
        let other = r#"{"jsonrpc":"2.0","id":5,"result":{"tokens":[]}}"#;
        assert_eq!(outbound(other), other);
        let plain = r#"{"jsonrpc":"2.0","method":"run/delta","params":{"text":"a token"}}"#;
        assert_eq!(outbound(plain), plain);
    }

    #[test]
    fn other_frames_are_logged_as_they_came_and_one_that_is_not_json_by_its_length() {
        let other = r#"{"jsonrpc":"2.0","id":1,"method":"ask","params":{"key":"not a secret"}}"#;
        assert_eq!(inbound(other), other);
        let broken = r#"{"method":"keys/set","params":{"key":"sk-2"}"#;
        assert_eq!(
            inbound(broken),
            format!("<{} bytes, not JSON>", broken.len())
        );
    }
}
