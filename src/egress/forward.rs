//! A request the proxy sends on itself: the command's request to the URL it was judged
//! for, with the hop-by-hop headers and the proxy's own credential taken out and the
//! person's credential (if any) put in; the upstream's answer streamed back.

use bytes::Bytes;
use futures_util::TryStreamExt;
use http::{header, HeaderMap, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};
use hyper::body::{Frame, Incoming};

use super::HostCredential;
use crate::web::RefusedAddress;

/// A response body: a fixed text, or an upstream's streamed through.
pub(super) type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// A response of `status` with `body` as plain text.
pub(super) fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Headers that belong to one connection, not to the request or response.
const HOP_BY_HOP: &[header::HeaderName] = &[
    header::CONNECTION,
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
];

/// Sends `request` to `url` through `client`, with `credential` added, and answers what
/// came back (or 403/502 saying why nothing did).
pub(super) async fn forward(
    client: &reqwest::Client,
    request: Request<Incoming>,
    url: String,
    credential: Option<&HostCredential>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let mut headers = end_to_end(parts.headers);
    if let Some(credential) = credential {
        let mut value = credential.value.clone();
        value.set_sensitive(true);
        headers.insert(credential.header.clone(), value);
    }
    let body =
        BodyStream::new(body).try_filter_map(|frame| async move { Ok(frame.into_data().ok()) });
    let sent = client
        .request(parts.method, &url)
        .headers(headers)
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await;
    let upstream = match sent {
        Ok(upstream) => upstream,
        Err(error) => return refused_or_failed(&url, &error),
    };
    let status = upstream.status();
    let headers = end_to_end(upstream.headers().clone());
    let mut response = Response::new(Body::new(StreamBody::new(
        upstream
            .bytes_stream()
            .map_ok(Frame::data)
            .map_err(std::io::Error::other),
    )));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// `headers` without the hop-by-hop ones (and those `Connection` names).
fn end_to_end(mut headers: HeaderMap) -> HeaderMap {
    let named: Vec<header::HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| name.trim().parse().ok())
        .collect();
    for name in HOP_BY_HOP.iter().chain(&named) {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
    headers.remove("keep-alive");
    headers
}

/// 403 when the host resolved only to addresses the filter refuses, else 502.
fn refused_or_failed(url: &str, error: &reqwest::Error) -> Response<Body> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<RefusedAddress>() {
            return text(
                StatusCode::FORBIDDEN,
                format!("rummy egress proxy: {refused} (RUMMY_SANDBOX_ALLOW_NETS)\n"),
            );
        }
        source = cause.source();
    }
    let host = url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default();
    text(
        StatusCode::BAD_GATEWAY,
        format!("rummy egress proxy: cannot reach {host}: {}\n", error),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_and_the_proxys_credential_are_not_passed_on() {
        let mut headers = HeaderMap::new();
        headers.insert(header::PROXY_AUTHORIZATION, "Basic x".parse().unwrap());
        headers.insert(header::CONNECTION, "close, x-private".parse().unwrap());
        headers.insert("x-private", "1".parse().unwrap());
        headers.insert(header::ACCEPT, "*/*".parse().unwrap());
        headers.insert(header::HOST, "a".parse().unwrap());
        let kept = end_to_end(headers);
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert!(kept.contains_key(header::ACCEPT));
    }
}
