//! GitHub's delivery log of one hook: the page to ask for, what a page says, where the next
//! page is, and the redelivery of one delivery.

use serde::Deserialize;

use crate::claim::Millis;
use crate::secret::Secret;

/// Deliveries asked for per page: a failed one may take a claim request and a redelivery, so
/// a call stays within the Workers Free plan's 50 subrequests.
pub const GITHUB_PAGE: u32 = 20;

/// `base` and `path` joined (GitHub Enterprise Server's API lives under a path).
fn joined(base: &url::Url, path: &str) -> Result<url::Url, url::ParseError> {
    url::Url::parse(&format!("{}/{path}", base.as_str().trim_end_matches('/')))
}

/// The URL of a page of `hook`'s deliveries, newest first: the first, or the one GitHub's
/// `cursor` names.
pub fn list_url(base: &url::Url, hook: &str, cursor: Option<&str>) -> String {
    let Ok(mut url) = joined(base, &format!("{hook}/deliveries")) else {
        return String::new();
    };
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("per_page", &GITHUB_PAGE.to_string());
        if let Some(cursor) = cursor {
            query.append_pair("cursor", cursor);
        }
    }
    url.to_string()
}

/// The URL that asks GitHub to redeliver delivery `id` of `hook`.
pub fn redeliver_url(base: &url::Url, hook: &str, id: u64) -> String {
    joined(base, &format!("{hook}/deliveries/{id}/attempts"))
        .map(|url| url.to_string())
        .unwrap_or_default()
}

/// The headers of a request to GitHub's API with `token`.
pub fn headers(token: &Secret) -> Vec<(String, String)> {
    vec![
        (
            "authorization".into(),
            format!("Bearer {}", token.expose_str()),
        ),
        ("accept".into(), "application/vnd.github+json".into()),
        ("x-github-api-version".into(), "2022-11-28".into()),
        (
            "user-agent".into(),
            crate::reconcile::tally::USER_AGENT.into(),
        ),
    ]
}

/// One delivery of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedDelivery {
    /// GitHub's id of this attempt (what a redelivery names).
    pub id: u64,
    /// The delivery id (`X-GitHub-Delivery`), the same for every attempt of one delivery.
    pub guid: String,
    /// True when GitHub counts it delivered (`status` `OK`).
    pub ok: bool,
    /// When GitHub sent it.
    pub delivered_at: Millis,
}

#[derive(Deserialize)]
struct DeliveryShape {
    id: u64,
    guid: String,
    status: String,
    delivered_at: String,
}

/// The deliveries `body` lists; `Err` says why it is not such a list.
pub fn read_page(body: &[u8]) -> Result<Vec<ListedDelivery>, String> {
    let items: Vec<DeliveryShape> = serde_json::from_slice(body)
        .map_err(|error| format!("GitHub's list did not read as deliveries: {error}"))?;
    items
        .into_iter()
        .map(|item| {
            let delivered_at = crate::rfc3339::parse(&item.delivered_at).ok_or_else(|| {
                "GitHub listed a delivery whose delivered_at is not a time".to_owned()
            })?;
            Ok(ListedDelivery {
                id: item.id,
                ok: item.status == "OK",
                guid: item.guid,
                delivered_at,
            })
        })
        .collect()
}

/// GitHub's cursor of the next page, from the `Link` header's `rel="next"` URL; `None` on the
/// last page.
pub fn next_cursor(link: Option<&str>) -> Option<String> {
    link?.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let is_next = params
            .split(';')
            .any(|param| param.trim().replace(' ', "") == "rel=\"next\"");
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let url = url::Url::parse(target).ok()?;
        let cursor = url.query_pairs().find(|(key, _)| key == "cursor");
        is_next.then_some(cursor?.1.into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_redeliveries_are_under_the_hook() {
        let base = url::Url::parse("https://api.github.com").unwrap();
        let hook = "repos/acme/shop/hooks/42";
        assert_eq!(
            list_url(&base, hook, None),
            "https://api.github.com/repos/acme/shop/hooks/42/deliveries?per_page=20"
        );
        assert_eq!(
            list_url(&base, hook, Some("v1_12&x")),
            "https://api.github.com/repos/acme/shop/hooks/42/deliveries?per_page=20&cursor=v1_12%26x"
        );
        let enterprise = url::Url::parse("https://git.example.com/api/v3/").unwrap();
        assert_eq!(
            redeliver_url(&enterprise, "orgs/acme/hooks/7", 12),
            "https://git.example.com/api/v3/orgs/acme/hooks/7/deliveries/12/attempts"
        );
    }

    #[test]
    fn a_page_says_which_deliveries_failed() {
        let body = br#"[
            {"id": 2, "guid": "0b989ba4", "delivered_at": "2026-12-06T10:00:00Z", "redelivery": false, "status": "Invalid HTTP Response: 503", "status_code": 503, "event": "issues", "action": "opened"},
            {"id": 1, "guid": "0b989ba3", "delivered_at": "2026-12-06T09:00:00Z", "redelivery": false, "status": "OK", "status_code": 200, "event": "push", "action": null}
        ]"#;
        let page = read_page(body).unwrap();
        assert_eq!(page.len(), 2);
        assert!(!page[0].ok && page[1].ok);
        assert_eq!(page[0].guid, "0b989ba4");
        assert_eq!(
            page[0].delivered_at,
            crate::rfc3339::parse("2026-12-06T10:00:00Z").unwrap()
        );
        assert!(read_page(br#"{"message": "Not Found"}"#).is_err());
    }

    #[test]
    fn the_next_page_s_cursor_comes_from_the_link_header() {
        let link = r#"<https://api.github.com/repos/a/b/hooks/1/deliveries?per_page=20&cursor=v1_9>; rel="next", <https://api.github.com/repos/a/b/hooks/1/deliveries?per_page=20>; rel="first""#;
        assert_eq!(next_cursor(Some(link)).as_deref(), Some("v1_9"));
        let last = r#"<https://api.github.com/x?per_page=20>; rel="first""#;
        assert_eq!(next_cursor(Some(last)), None);
        assert_eq!(next_cursor(None), None);
    }
}
