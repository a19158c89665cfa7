//! A local HTTP server on loopback that plays a SearXNG instance (`/search`, its JSON API)
//! and a web site (pages, text, an image, redirect chains, a huge body, a slow body,
//! redirects to refused addresses), and remembers every request it got.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use serde_json::json;

use crate::support::eventually;

/// The HTML page at `/page`.
pub(super) const PAGE: &str = "<!DOCTYPE html><html><head><title>Welcome</title>\
    <style>body { color: red }</style><script>alert('tracking')</script></head>\
    <body><h1>Welcome to the docs</h1><p>The answer is <b>forty-two</b>.</p>\
    <ul><li>first point</li><li>second point</li></ul></body></html>";

/// The text at `/notes.txt`.
pub(super) const NOTES: &str = "plain notes <not html>\nsecond line\n";

/// Bytes of `/huge` and `/huge-stream`.
pub(super) const HUGE_BYTES: usize = 4 * 1024 * 1024;

/// The running server and the requests it got (`path?query`).
pub(super) struct WebServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl WebServer {
    /// Starts it on a free loopback port.
    pub(super) async fn start() -> WebServer {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let server = HttpServer::new(move || {
            let log = Arc::clone(&log);
            App::new()
                .app_data(web::Data::new(log))
                .wrap_fn(|request, service| {
                    let seen = request
                        .app_data::<web::Data<Arc<Mutex<Vec<String>>>>>()
                        .map(|log| Arc::clone(log.get_ref()));
                    if let Some(seen) = seen {
                        seen.lock().unwrap().push(request.uri().to_string());
                    }
                    actix_web::dev::Service::call(service, request)
                })
                .route("/search", web::get().to(search))
                .route("/page", web::get().to(page))
                .route("/notes.txt", web::get().to(notes))
                .route("/image.png", web::get().to(image))
                .route("/missing", web::get().to(HttpResponse::NotFound))
                .route("/hop/{left}", web::get().to(hop))
                .route("/to/{target}", web::get().to(redirect_away))
                .route("/huge", web::get().to(huge))
                .route("/exact", web::get().to(exact))
                .route("/exact-stream", web::get().to(exact_stream))
                .route("/huge-stream", web::get().to(huge_stream))
                .route("/slow", web::get().to(slow))
        })
        .workers(1)
        .bind(("127.0.0.1", 0))
        .unwrap();
        let addr = server.addrs()[0];
        actix_web::rt::spawn(server.run());
        WebServer { addr, requests }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(super) fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Waits (a bounded while) until the log holds `line`.
    pub(super) async fn wait_for(&self, line: &str) {
        eventually(&format!("the web server to log {line}"), async || {
            self.requests()
                .iter()
                .any(|seen| seen == line)
                .then_some(())
        })
        .await;
    }

    /// Every request so far, as `path?query`.
    pub(super) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// SearXNG's JSON API: `format=json` or 403 (as SearXNG answers when JSON is off); the
/// query `junk` gets HTML, `broken` a 500, `slow` nothing for a minute; any other query ten
/// results with fields the client does not read.
async fn search(query: web::Query<HashMap<String, String>>) -> HttpResponse {
    if query.get("format").map(String::as_str) != Some("json") {
        return HttpResponse::Forbidden().finish();
    }
    let q = query.get("q").cloned().unwrap_or_default();
    match q.as_str() {
        "junk" => HttpResponse::Ok()
            .content_type("text/html")
            .body("<html>rate limited</html>"),
        "broken" => HttpResponse::InternalServerError().finish(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            HttpResponse::Ok().json(json!({"results": []}))
        }
        _ => {
            let results: Vec<_> = (1..=10)
                .map(|n| {
                    json!({
                        "url": format!("https://example.com/{n}"),
                        "title": format!("{q} result {n}"),
                        "content": format!("snippet {n} about {q}"),
                        "engine": "duckduckgo",
                        "score": 1.0,
                    })
                })
                .collect();
            HttpResponse::Ok()
                .json(json!({"query": q, "number_of_results": 10, "results": results}))
        }
    }
}

async fn page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(PAGE)
}

async fn notes() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body(NOTES)
}

async fn image() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("image/png")
        .body(Bytes::from_static(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"))
}

/// `/hop/<n>` redirects to `/hop/<n-1>`, `/hop/0` to `/page`: n + 1 redirects in all.
async fn hop(left: web::Path<u32>) -> HttpResponse {
    let next = match left.into_inner() {
        0 => "/page".to_string(),
        n => format!("/hop/{}", n - 1),
    };
    HttpResponse::Found()
        .insert_header(("Location", next))
        .finish()
}

/// `/to/other-loopback` redirects to another loopback address, `/to/file` to a file URL,
/// `/to/localhost` to this server by name.
async fn redirect_away(target: web::Path<String>, request: HttpRequest) -> HttpResponse {
    let port = request.app_config().local_addr().port();
    let location = match target.as_str() {
        "other-loopback" => format!("http://127.0.0.2:{port}/page"),
        "file" => "file:///etc/passwd".to_string(),
        _ => format!("http://localhost:{port}/page"),
    };
    HttpResponse::Found()
        .insert_header(("Location", location))
        .finish()
}

/// Bytes of `/exact` and `/exact-stream`: a limit the tests set.
pub(super) const EXACT_BYTES: usize = 64 * 1024;

/// A body of exactly [`EXACT_BYTES`], its length declared.
async fn exact() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain")
        .body(vec![b'e'; EXACT_BYTES])
}

/// The same in four chunks without a declared length.
async fn exact_stream() -> HttpResponse {
    let chunk = Bytes::from(vec![b'f'; EXACT_BYTES / 4]);
    let chunks = (0..4).map(move |_| Ok::<_, actix_web::Error>(chunk.clone()));
    HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(futures_util::stream::iter(chunks))
}

/// A body larger than any limit the tests set, with its length declared.
async fn huge() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain")
        .body(vec![b'x'; HUGE_BYTES])
}

/// The same without a declared length (chunked), so only counting stops it.
async fn huge_stream() -> HttpResponse {
    let chunk = Bytes::from(vec![b'y'; 64 * 1024]);
    let chunks =
        (0..HUGE_BYTES / chunk.len()).map(move |_| Ok::<_, actix_web::Error>(chunk.clone()));
    HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(futures_util::stream::iter(chunks))
}

/// Notes `dropped /slow` in the log when the slow body is dropped (its client went away).
struct DropNote(Arc<Mutex<Vec<String>>>);

impl Drop for DropNote {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(DROPPED_SLOW.to_string());
    }
}

/// What the log says once a client stopped reading `/slow`.
pub(super) const DROPPED_SLOW: &str = "dropped /slow";

/// A trickle: a few bytes every 50 ms for ten minutes, so only a total time limit ends it
/// (and a client that goes away is noticed at the next write).
async fn slow(log: web::Data<Arc<Mutex<Vec<String>>>>) -> HttpResponse {
    let note = DropNote(Arc::clone(log.get_ref()));
    let chunks = futures_util::stream::unfold((0u32, note), |(sent, note)| async move {
        if sent > 12_000 {
            return None;
        }
        if sent > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let chunk = Bytes::from_static(b"still coming ");
        Some((Ok::<_, actix_web::Error>(chunk), (sent + 1, note)))
    });
    HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(chunks)
}
