//! The operator page: `GET /admin/` and its two assets, served by the worker itself. Plain
//! HTML, CSS and JavaScript with no external asset, under a strict Content-Security-Policy; the
//! page loads without a token, and every call it makes to the admin API carries the one the
//! operator typed (kept in `sessionStorage`, never in a URL or a cookie).

use crate::answer::HttpAnswer;

/// The page's policy: its own script and style only, calls to this origin only, no frames, no
/// forms posted anywhere, no inline code.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const HTML: &str = include_str!("page/index.html");
const CSS: &str = include_str!("page/page.css");
const SCRIPT: &str = include_str!("page/page.js");

/// The asset at `path` (after `/admin/`) for a `GET`: the page (`""` or `index.html`), its
/// stylesheet or its script, each with its content type, the policy above and headers that
/// keep it from being framed, sniffed, cached or sent as a referrer. `None` for any other
/// path, which is an admin API route.
pub fn asset(path: &str) -> Option<HttpAnswer> {
    let (content_type, body) = match path {
        "" | "index.html" => ("text/html; charset=utf-8", HTML),
        "page.css" => ("text/css; charset=utf-8", CSS),
        "page.js" => ("text/javascript; charset=utf-8", SCRIPT),
        _ => return None,
    };
    let answer = HttpAnswer {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        body: Some(body.as_bytes().to_vec()),
    };
    Some(
        answer
            .with("content-security-policy", CONTENT_SECURITY_POLICY)
            .with("x-content-type-options", "nosniff")
            .with("x-frame-options", "DENY")
            .with("referrer-policy", "no-referrer")
            .with("cache-control", "no-store"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_assets_carry_the_policy_and_nothing_else_is_an_asset() {
        for path in ["", "index.html", "page.css", "page.js"] {
            let answer = asset(path).expect("an asset");
            assert_eq!(answer.status, 200);
            let csp = answer
                .headers
                .iter()
                .find(|(name, _)| name == "content-security-policy")
                .map(|(_, value)| value.as_str());
            assert_eq!(csp, Some(CONTENT_SECURITY_POLICY));
        }
        assert!(asset("dead-letters").is_none());
        assert!(asset("events/evt_1").is_none());
    }

    #[test]
    fn the_page_loads_only_its_own_assets_and_has_no_inline_code() {
        assert!(HTML.contains(r#"<script src="page.js""#));
        assert!(HTML.contains(r#"<link rel="stylesheet" href="page.css""#));
        assert!(
            !HTML.contains("<script>"),
            "no inline script (the policy forbids it)"
        );
        assert!(
            !HTML.contains(" style="),
            "no inline style (the policy forbids it)"
        );
        let handler = HTML.split(" on").skip(1).any(|after| {
            let name: String = after.chars().take_while(char::is_ascii_lowercase).collect();
            !name.is_empty() && after[name.len()..].starts_with('=')
        });
        assert!(!handler, "no inline event handler");
        assert!(
            !HTML.contains("http://") && !HTML.contains("https://"),
            "no external asset"
        );
    }

    /// The script puts what the admin API answers on the page as text only: no HTML sink
    /// (`innerHTML`, `outerHTML`, `insertAdjacentHTML`, `document.write`) and no string made
    /// into code (`eval`, `new Function`, a string to `setTimeout`), so an id, a type or a
    /// reason an attacker chose is shown, never run.
    #[test]
    fn the_page_s_script_writes_text_never_html() {
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "setTimeout('",
            "setTimeout(\"",
        ] {
            assert!(!SCRIPT.contains(sink), "page.js uses {sink}");
        }
        assert!(SCRIPT.contains("textContent"), "it writes text");
    }
}
