//! The console's files, compiled into the binary: no build step, nothing fetched at run time.
//! Each is answered with its content type and `Cache-Control: no-cache` with a strong `ETag`
//! (the SHA-256 of its bytes), so a browser revalidates each load and gets `304` while the
//! binary is the same, and a new binary's files at once.

use std::sync::OnceLock;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

/// One embedded file: its name under the console path, content type and bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            bytes: include_bytes!(concat!("web/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("rpc.js", JS),
    asset!("dom.js", JS),
    asset!("projects.js", JS),
    asset!("runs.js", JS),
    asset!("run.js", JS),
    asset!("run-forms.js", JS),
    asset!("run-details.js", JS),
    asset!("conversation.js", JS),
    asset!("markdown.js", JS),
    asset!("time.js", JS),
    asset!("live.js", JS),
    asset!("diff.js", JS),
    asset!("changes.js", JS),
    asset!("memory.js", JS),
    asset!("usage.js", JS),
    asset!("admin.js", JS),
    asset!("people.js", JS),
    asset!("tokens.js", JS),
    asset!("admin_caps.js", JS),
    asset!("admin_mcp.js", JS),
    asset!("caps.js", JS),
    asset!("inbox.js", JS),
    asset!("rules.js", JS),
    asset!("webhooks.js", JS),
    asset!("setup.js", JS),
    asset!("keys.js", JS),
    asset!("mcp_keys.js", JS),
];

/// Each asset's `ETag`, in the order of [`ASSETS`], computed once.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|asset| {
                let digest = Sha256::digest(asset.bytes);
                let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

/// `<path>/`: the page.
pub(super) async fn index(request: HttpRequest) -> HttpResponse {
    serve(&request, "index.html")
}

/// `<path>/{file}`.
pub(super) async fn file(request: HttpRequest, name: web::Path<String>) -> HttpResponse {
    serve(&request, &name)
}

fn serve(request: &HttpRequest, name: &str) -> HttpResponse {
    let Some(index) = ASSETS.iter().position(|asset| asset.name == name) else {
        return HttpResponse::NotFound().finish();
    };
    let asset = &ASSETS[index];
    let etag = &etags()[index];
    let fresh = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let mut response = if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::ETAG, etag.as_str()));
    if fresh {
        return response.finish();
    }
    response
        .insert_header((header::CONTENT_TYPE, asset.content_type))
        .body(asset.bytes)
}
