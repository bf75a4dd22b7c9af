//! Reading configuration values by key, collecting every problem rather than stopping at the
//! first.

use super::ConfigProblem;

/// Reads keys through a lookup (a wrangler var or secret by name; `None` when unset) and keeps
/// every problem found. A problem names its key and what is expected, never the value given.
pub struct Reader<F> {
    lookup: F,
    problems: Vec<ConfigProblem>,
}

impl<F: Fn(&str) -> Option<String>> Reader<F> {
    /// A reader over `lookup`, with no problems yet.
    pub fn new(lookup: F) -> Self {
        Reader {
            lookup,
            problems: Vec::new(),
        }
    }

    /// The trimmed value of `key`; `None` when unset or blank.
    pub fn raw(&self, key: &str) -> Option<String> {
        (self.lookup)(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// Records a problem with `key`.
    pub fn problem(&mut self, key: &'static str, problem: impl Into<String>) {
        self.problems.push(ConfigProblem {
            key,
            problem: problem.into(),
        });
    }

    /// A whole number from `min` to `max`, `default` when unset.
    pub fn integer(&mut self, key: &'static str, default: u64, min: u64, max: u64) -> u64 {
        let Some(text) = self.raw(key) else {
            return default;
        };
        match text.parse::<u64>() {
            Ok(value) if (min..=max).contains(&value) => value,
            _ => {
                self.problem(key, format!("not a whole number from {min} to {max}"));
                default
            }
        }
    }

    /// A number of hours above 0 and at most 8784 (366 days; decimals allowed), `default` when
    /// unset.
    pub fn hours(&mut self, key: &'static str, default: f64) -> f64 {
        let Some(text) = self.raw(key) else {
            return default;
        };
        match text.parse::<f64>() {
            Ok(h) if h.is_finite() && h > 0.0 && h <= super::MAX_RETENTION_HOURS => h,
            _ => {
                self.problem(
                    key,
                    "not a number of hours above 0 and at most 8784 (366 days)",
                );
                default
            }
        }
    }

    /// `true` or `false`, `false` when unset.
    pub fn flag(&mut self, key: &'static str) -> bool {
        match self.raw(key).as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                self.problem(key, "not `true` or `false`");
                false
            }
        }
    }

    /// An absolute `http://` or `https://` URL, when set.
    pub fn url(&mut self, key: &'static str) -> Option<url::Url> {
        let text = self.raw(key)?;
        match url::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                Some(url)
            }
            _ => {
                self.problem(key, "not an absolute http:// or https:// URL");
                None
            }
        }
    }

    /// What was read, or every problem found, in the order of [`super::keys::ORDER`].
    pub fn finish<T>(mut self, value: T) -> Result<T, Vec<ConfigProblem>> {
        if self.problems.is_empty() {
            return Ok(value);
        }
        let rank = |key: &str| super::keys::ORDER.iter().position(|k| *k == key);
        self.problems.sort_by_key(|p| rank(p.key));
        Err(self.problems)
    }
}
