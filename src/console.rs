//! The web console: pages served under `RUMMY_CONSOLE_PATH` (default `/ui`), compiled into
//! the binary, and the sign-in that gives a browser a session cookie. The page is a client
//! of rummy's own JSON-RPC over WebSocket, opened at `<path>/rpc` with that cookie
//! (`ws::cookie::caller`), where every call passes the same role and project checks as a
//! token's.
//!
//! Every response under the path carries [`SECURITY_HEADERS`]: a Content-Security-Policy
//! that runs only the console's own scripts (no inline script, no other origin, no frames).

mod assets;
mod audit;
pub(crate) mod oidc;
pub(crate) mod refusals;
mod session;

use actix_web::http::header;
use actix_web::middleware::DefaultHeaders;
use actix_web::{web, HttpResponse};

/// The headers of every console response: scripts, styles, images and connections from the
/// page's own origin only (`'self'` includes its `ws:`/`wss:`), no inline script or style,
/// never framed, no `<base>`, forms posted nowhere else, no referrer, no sniffing.
pub(crate) const SECURITY_HEADERS: [(&str, &str); 4] = [
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
];

/// Routes the console under `base`: `base` itself redirects to `base/`, which is the page;
/// `base/session` signs in (POST), says who is signed in (GET) and signs out (DELETE);
/// `base/oidc/start` and `base/oidc/callback` sign in through an identity provider;
/// anything else is one of the embedded files, or 404.
pub(crate) fn configure(config: &mut web::ServiceConfig, base: &str) {
    let mut headers = DefaultHeaders::new();
    for header in SECURITY_HEADERS {
        headers = headers.add(header);
    }
    let slash = format!("{base}/");
    config.route(
        base,
        web::get().to(move || {
            let slash = slash.clone();
            async move {
                let mut response = HttpResponse::PermanentRedirect();
                for header in SECURITY_HEADERS {
                    response.insert_header(header);
                }
                response.insert_header((header::LOCATION, slash)).finish()
            }
        }),
    );
    config.service(
        web::scope(base)
            .wrap(headers)
            .app_data(session::body_config())
            .route("/session", web::post().to(session::sign_in))
            .route("/session", web::get().to(session::who))
            .route("/session", web::delete().to(session::sign_out))
            .route("/oidc/start", web::get().to(oidc::start))
            .route("/oidc/callback", web::get().to(oidc::callback))
            .route("/", web::get().to(assets::index))
            .route("/{file}", web::get().to(assets::file))
            .default_service(web::to(|| async { HttpResponse::NotFound().finish() })),
    );
}
