//! One command's proxy: its listener, and each request on it judged against the command's
//! grant — refused (403), tunnelled untouched, or, for a host the run's person has a
//! credential for, opened with a certificate of the proxy's CA and forwarded with the
//! credential added.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, TcpStream};

use super::destination::allowed;
use super::forward::{forward, text, Body};
use super::{Egress, Grant, HostCredential, PROXY_USER};
use crate::llm::CancellationToken;
use crate::web::RefusedAddress;

/// One command's proxy: what it may reach, on whose behalf, and how it proves it is that
/// command.
pub(super) struct Session {
    egress: Arc<Egress>,
    grant: Grant,
    /// The `Proxy-Authorization` value the command's proxy URL makes its clients send.
    authorization: String,
    /// The hosts whose credential was used already (each use is audited once per command).
    audited: Mutex<HashSet<String>>,
}

impl Session {
    pub(super) fn new(egress: Arc<Egress>, grant: Grant, token: &str) -> Arc<Session> {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{PROXY_USER}:{token}"));
        Arc::new(Session {
            egress,
            grant,
            authorization: format!("Basic {basic}"),
            audited: Mutex::default(),
        })
    }
}

/// Serves `listener` until `stop`, each connection until it ends or `stop`.
pub(super) async fn accept(listener: TcpListener, session: Arc<Session>, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let (session, stop) = (Arc::clone(&session), stop.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let session = Arc::clone(&session);
                async move { Ok::<_, Infallible>(session.handle(request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

/// What the proxy does with a request to `host` at `port`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Judgement {
    /// The proxy URL's credential is missing or wrong.
    Unknown,
    /// The destination is not among the project's.
    Refused,
    Allowed,
}

/// Judges a request naming `host` and `port` that carried `authorization`.
pub(super) fn judge(
    grant: &Grant,
    expected: &str,
    authorization: Option<&[u8]>,
    host: &str,
    port: u16,
) -> Judgement {
    let known = authorization.is_some_and(|given| bool::from(given.ct_eq(expected.as_bytes())));
    if !known {
        Judgement::Unknown
    } else if allowed(&grant.destinations, host, port) {
        Judgement::Allowed
    } else {
        Judgement::Refused
    }
}

impl Session {
    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let uri = request.uri();
        let connect = request.method() == Method::CONNECT;
        let scheme_port = if connect { 443 } else { 80 };
        let host = uri.host().unwrap_or_default().to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(scheme_port);
        let plain = uri.scheme_str() == Some("http");
        let authorization = request
            .headers()
            .get(header::PROXY_AUTHORIZATION)
            .map(http::HeaderValue::as_bytes);
        match judge(&self.grant, &self.authorization, authorization, &host, port) {
            Judgement::Unknown => {
                let mut response = text(
                    StatusCode::PROXY_AUTHENTICATION_REQUIRED,
                    "rummy egress proxy: this proxy serves one command, which names it with its credential\n".into(),
                );
                response.headers_mut().insert(
                    header::PROXY_AUTHENTICATE,
                    http::HeaderValue::from_static("Basic realm=\"rummy\""),
                );
                return response;
            }
            Judgement::Refused => {
                return text(
                    StatusCode::FORBIDDEN,
                    format!(
                        "rummy egress proxy: {host}:{port} is not among the destinations this \
                         project's commands may reach (sandbox.hosts)\n"
                    ),
                )
            }
            Judgement::Allowed => {}
        }
        let credential = match self.credential(&host).await {
            Ok(credential) => credential,
            Err(why) => {
                return text(
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "rummy egress proxy: your credential for {host} cannot be used, so the \
                         request was not sent: {why}\n"
                    ),
                )
            }
        };
        if !connect {
            if !plain {
                return text(
                    StatusCode::BAD_REQUEST,
                    "rummy egress proxy: only http:// URLs or CONNECT\n".into(),
                );
            }
            let target = format!("http://{host}:{port}{}", path_of(request.uri()));
            self.audit(&host, port, credential.as_ref()).await;
            return forward(&self.egress.client, request, target, credential.as_ref()).await;
        }
        match credential {
            Some(credential) => self.intercept(request, host, port, credential).await,
            None => self.tunnel(request, &host, port).await,
        }
    }

    /// The run's person's credential for `host`, if any; why theirs cannot be used.
    async fn credential(&self, host: &str) -> Result<Option<HostCredential>, String> {
        let Some(person) = self.grant.person.as_deref() else {
            return Ok(None);
        };
        self.egress.credentials.find(person, host).await
    }

    /// Notes in the audit (and as the credential's last use) the first use of a credential
    /// for `host` by this command.
    async fn audit(&self, host: &str, port: u16, credential: Option<&HostCredential>) {
        let (Some(credential), Some(person)) = (credential, self.grant.person.clone()) else {
            return;
        };
        let first = self
            .audited
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(host.to_owned());
        if !first {
            return;
        }
        let detail = serde_json::json!({
            "project": self.grant.project.0,
            "run": self.grant.run.0,
            "port": port,
            "header": credential.header.as_str(),
        })
        .to_string();
        let subject = host.to_owned();
        let recorded = self
            .egress
            .db
            .call(move |conn| {
                crate::db::queries::admin_changes::record(
                    conn,
                    &person,
                    "egress/credential",
                    &subject,
                    &detail,
                )?;
                crate::db::queries::secrets::used(
                    conn,
                    &person,
                    crate::secrets::HOST_CREDENTIAL,
                    &subject,
                )
            })
            .await;
        if let Err(error) = recorded {
            tracing::error!(%error, "cannot audit a use of a host credential");
        }
    }

    /// Opens a TLS connection to the command as `host` and forwards each request on it to
    /// `host` with `credential` added.
    async fn intercept(
        self: Arc<Self>,
        request: Request<Incoming>,
        host: String,
        port: u16,
        credential: HostCredential,
    ) -> Response<Body> {
        let config = match self.egress.authority.server_config(&host) {
            Ok(config) => config,
            Err(error) => {
                tracing::error!(%error, "cannot make a certificate for the egress proxy");
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("rummy egress proxy: {error}\n"),
                );
            }
        };
        tokio::spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(request).await else {
                return;
            };
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            let Ok(tls) = acceptor.accept(TokioIo::new(upgraded)).await else {
                return;
            };
            let session = Arc::clone(&self);
            let service = service_fn(move |inner: Request<Incoming>| {
                let session = Arc::clone(&session);
                let (host, credential) = (host.clone(), credential.clone());
                async move {
                    let target = format!("https://{host}:{port}{}", path_of(inner.uri()));
                    session.audit(&host, port, Some(&credential)).await;
                    Ok::<_, Infallible>(
                        forward(&session.egress.client, inner, target, Some(&credential)).await,
                    )
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
        empty(StatusCode::OK)
    }

    /// Connects to `host` at `port` (an address the filter permits) and, once the command's
    /// connection is upgraded, passes bytes both ways.
    async fn tunnel(&self, request: Request<Incoming>, host: &str, port: u16) -> Response<Body> {
        let mut upstream = match connect(&self.egress, host, port).await {
            Ok(upstream) => upstream,
            Err(response) => return response,
        };
        tokio::spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(request).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut upstream).await;
        });
        empty(StatusCode::OK)
    }
}

/// A connection to `host` at `port`, at the first address it resolves to that the filter
/// permits; else the response saying why not.
async fn connect(egress: &Egress, host: &str, port: u16) -> Result<TcpStream, Response<Body>> {
    let addresses = tokio::net::lookup_host((host, port))
        .await
        .map_err(|error| {
            text(
                StatusCode::BAD_GATEWAY,
                format!("rummy egress proxy: cannot resolve {host}: {error}\n"),
            )
        })?;
    let mut refused = None;
    let mut failed = None;
    for address in addresses {
        if let Some(reason) = egress.filter.refusal(address.ip()) {
            refused = Some(RefusedAddress {
                host: host.to_owned(),
                address: address.ip(),
                reason,
            });
            continue;
        }
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(error) => failed = Some(error),
        }
    }
    Err(match (failed, refused) {
        (Some(error), _) => text(
            StatusCode::BAD_GATEWAY,
            format!("rummy egress proxy: cannot reach {host}:{port}: {error}\n"),
        ),
        (None, Some(refused)) => text(
            StatusCode::FORBIDDEN,
            format!("rummy egress proxy: {refused} (RUMMY_SANDBOX_ALLOW_NETS)\n"),
        ),
        (None, None) => text(
            StatusCode::BAD_GATEWAY,
            format!("rummy egress proxy: {host} has no address\n"),
        ),
    })
}

/// The path and query of `uri` (`/` when it has none).
fn path_of(uri: &http::Uri) -> &str {
    uri.path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str)
}

/// An empty response of `status`.
fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
}
