//! The page a refused sign-in through the provider ends on: what happened and what to do,
//! and the way back to the sign-in page.

use actix_web::http::header;
use actix_web::HttpResponse;

use super::Refusal;

/// `text` with `&`, `<`, `>`, `"` and `'` escaped for HTML.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page saying `refusal`, under the console's path `base`.
pub(super) fn refused(base: &str, refusal: &Refusal) -> HttpResponse {
    let base = escaped(base);
    let message = escaped(&refusal.to_string());
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Not signed in · rummy console</title>\n\
         <link rel=\"stylesheet\" href=\"{base}/style.css\">\n</head>\n<body>\n\
         <main id=\"main\"><div class=\"form\">\n<h1>Not signed in</h1>\n\
         <p class=\"error\" role=\"alert\" id=\"refusal\">{message}</p>\n\
         <p><a href=\"{base}/\">Back to the sign-in page</a></p>\n</div></main>\n</body>\n</html>\n"
    );
    HttpResponse::build(refusal.status())
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_provider_says_is_escaped() {
        assert_eq!(
            escaped(r#"<script>"a" & 'b'</script>"#),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
    }
}
