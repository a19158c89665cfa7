//! The web client against the local server: pages made readable, redirects bounded and
//! judged hop by hop, the server's own addresses refused (as address literals and as names
//! that resolve to them), the size and time limits, and SearXNG's answers good and bad.

use std::time::Duration;

use rummy::testing::{WebClient, WebError, WebOptions};

use super::servers::{WebServer, EXACT_BYTES, NOTES};

/// A client that may reach `allow`, reads at most `max_bytes`, and waits `timeout_ms`.
fn client(allow: &[&str], max_bytes: u64, timeout_ms: u64, searxng: Option<String>) -> WebClient {
    WebClient::new(WebOptions {
        searxng_url: searxng.map(|url| url.parse().unwrap()),
        timeout: Duration::from_millis(timeout_ms),
        max_bytes,
        max_redirects: 3,
        allow_nets: allow.iter().map(|net| net.parse().unwrap()).collect(),
    })
    .unwrap()
}

/// A client that may reach this machine's 127.0.0.1 (only).
fn loopback() -> WebClient {
    client(&["127.0.0.1/32"], 1024 * 1024, 10_000, None)
}

#[actix_web::test]
async fn html_becomes_markdown_text_stays_and_binary_is_refused() {
    let server = WebServer::start().await;
    let web = loopback();
    let page = web.fetch(&server.url("/page")).await.unwrap();
    assert_eq!(page.content_type, "text/html; charset=utf-8");
    assert_eq!(page.url, server.url("/page"));
    assert!(
        page.text.starts_with("# Welcome to the docs"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("The answer is **forty-two**."),
        "{}",
        page.text
    );
    assert!(page.text.contains("first point"), "{}", page.text);
    assert!(
        !page.text.contains("alert") && !page.text.contains("color"),
        "{}",
        page.text
    );
    let notes = web.fetch(&server.url("/notes.txt")).await.unwrap();
    assert_eq!(notes.text, NOTES);
    let image = web.fetch(&server.url("/image.png")).await.unwrap_err();
    assert_eq!(image, WebError::Binary("image/png".into()));
    let missing = web.fetch(&server.url("/missing")).await.unwrap_err();
    assert_eq!(missing, WebError::Status { status: 404 });
}

#[actix_web::test]
async fn redirects_are_followed_up_to_the_limit() {
    let server = WebServer::start().await;
    let web = loopback();
    let followed = web.fetch(&server.url("/hop/2")).await.unwrap();
    assert_eq!(
        followed.url,
        server.url("/page"),
        "three redirects are allowed"
    );
    let too_many = web.fetch(&server.url("/hop/3")).await.unwrap_err();
    assert_eq!(too_many, WebError::Redirect("more than 3 redirects".into()));
    let by_name = web.fetch(&server.url("/to/localhost")).await;
    assert!(
        by_name.is_ok(),
        "localhost resolves to an allowed 127.0.0.1: {by_name:?}"
    );
}

#[actix_web::test]
async fn a_redirect_to_a_refused_address_is_not_followed() {
    let server = WebServer::start().await;
    let web = loopback();
    let refused = web
        .fetch(&server.url("/to/other-loopback"))
        .await
        .unwrap_err();
    let WebError::Refused(refused) = refused else {
        panic!("followed to 127.0.0.2: {refused:?}");
    };
    assert_eq!(refused.reason, "loopback");
    assert_eq!(refused.address.to_string(), "127.0.0.2");
    let file = web.fetch(&server.url("/to/file")).await;
    assert!(file.is_err(), "{file:?}");
    assert!(!server.requests().iter().any(|seen| seen == "/page"));
}

#[actix_web::test]
async fn the_servers_own_network_is_refused_by_default_before_any_request() {
    let server = WebServer::start().await;
    let web = client(&[], 1024 * 1024, 10_000, None);
    let literal = web.fetch(&server.url("/page")).await.unwrap_err();
    assert!(
        literal
            .to_string()
            .starts_with("127.0.0.1 is a loopback address: fetching it is refused"),
        "{literal}"
    );
    let named = format!("http://localhost:{}/page", server.port());
    let WebError::Refused(refused) = web.fetch(&named).await.unwrap_err() else {
        panic!("localhost fetched");
    };
    assert_eq!(refused.host, "localhost");
    assert_eq!(refused.reason, "loopback");
    let mapped = format!("http://[::ffff:127.0.0.1]:{}/page", server.port());
    assert!(matches!(
        web.fetch(&mapped).await,
        Err(WebError::Refused(_))
    ));
    assert!(matches!(
        web.fetch("gopher://example.com/").await,
        Err(WebError::InvalidUrl(_))
    ));
    assert_eq!(
        server.requests(),
        [] as [String; 0],
        "nothing reached the server"
    );
}

#[actix_web::test]
async fn bodies_past_the_size_limit_are_refused_declared_or_not() {
    let server = WebServer::start().await;
    let web = loopback();
    let limit = WebError::TooLarge { limit: 1024 * 1024 };
    assert_eq!(web.fetch(&server.url("/huge")).await.unwrap_err(), limit);
    assert_eq!(
        web.fetch(&server.url("/huge-stream")).await.unwrap_err(),
        limit
    );
    let at_the_limit = client(&["127.0.0.1/32"], EXACT_BYTES as u64, 10_000, None);
    for path in ["/exact", "/exact-stream"] {
        let page = at_the_limit.fetch(&server.url(path)).await.unwrap();
        assert_eq!(page.text.len(), EXACT_BYTES, "{path}");
    }
}

#[actix_web::test]
async fn a_body_that_stalls_ends_at_the_time_limit() {
    let server = WebServer::start().await;
    let web = client(&["127.0.0.1/32"], 1024 * 1024, 500, None);
    let stalled = web.fetch(&server.url("/slow")).await.unwrap_err();
    assert_eq!(stalled, WebError::TimedOut { ms: 500 });
}

#[actix_web::test]
async fn searxng_answers_become_hits_and_its_failures_errors() {
    let server = WebServer::start().await;
    let web = client(&[], 1024 * 1024, 1000, Some(server.url("/")));
    let hits = web.search("rust sqlite", 3).await.unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].title, "rust sqlite result 1");
    assert_eq!(hits[0].url, "https://example.com/1");
    assert_eq!(hits[2].content, "snippet 3 about rust sqlite");
    assert_eq!(server.requests(), ["/search?q=rust+sqlite&format=json"]);
    assert!(matches!(
        web.search("junk", 3).await,
        Err(WebError::Junk(_))
    ));
    assert_eq!(
        web.search("broken", 3).await.unwrap_err(),
        WebError::Status { status: 500 }
    );
    assert_eq!(
        web.search("slow", 3).await.unwrap_err(),
        WebError::TimedOut { ms: 1000 }
    );
    let nowhere = client(&[], 1024, 1000, Some("http://127.0.0.1:9/".into()));
    let unreachable = nowhere.search("anything", 3).await.unwrap_err();
    assert!(
        matches!(unreachable, WebError::Transport(_)),
        "{unreachable:?}"
    );
    assert!(
        !unreachable.to_string().contains("127.0.0.1:9"),
        "{unreachable}"
    );
}
