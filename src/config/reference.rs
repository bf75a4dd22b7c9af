//! The configuration reference (`docs/configuration.md`) against the code: the keys it lists
//! are the keys the code reads, each row names a file that reads its key, each documented
//! default is the code's default, each documented range is the range the code checks, and
//! `wrangler.toml`'s `[vars]` ship the documented defaults.

use super::*;
use std::collections::HashMap;

/// Every key `Config::load` asks for, over configurations that reach every conditional read:
/// the minimal one, and one with every door and every sender on, in queue mode.
fn keys_the_code_reads() -> std::collections::BTreeSet<String> {
    let configurations: [&[(&str, &str)]; 3] = [
        &[
            ("STRIPE_WEBHOOK_SECRET", "whsec_a"),
            ("ORIGIN_URL", "http://127.0.0.1:9000/hook"),
        ],
        &[
            ("STRIPE_WEBHOOK_SECRET", "whsec_a"),
            ("ORIGIN_URL", "http://127.0.0.1:9000/hook"),
            (
                "STANDARD_WEBHOOK_SECRET",
                "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
            ),
            ("STANDARD_ORIGIN_URL", "http://127.0.0.1:9000/standard"),
            ("GITHUB_WEBHOOK_SECRET", "g"),
            ("GITHUB_ORIGIN_URL", "http://127.0.0.1:9000/github"),
            ("SHOPIFY_WEBHOOK_SECRET", "s"),
            ("SHOPIFY_ORIGIN_URL", "http://127.0.0.1:9000/shopify"),
            ("DELIVERY_MODE", "queue"),
            ("API_ORIGIN_URL", "http://127.0.0.1:9000"),
            ("IDEMPOTENCY_KEY_REQUIRED", "true"),
            ("IDEMPOTENCY_ALLOW_ANONYMOUS", "true"),
            ("ADMIN_TOKEN", "an-admin-token-long-enough"),
            ("ENABLE_TEST_ROUTES", "true"),
            ("LOG_STORAGE_USAGE", "true"),
            ("ALLOW_SHORT_RETENTION", "true"),
        ],
        // Nothing set: every read that does not depend on another key's value.
        &[],
    ];
    let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
    for pairs in configurations {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        let _ = Config::load(|key| {
            asked.borrow_mut().insert(key.to_owned());
            map.get(key).map(|v| (*v).to_owned())
        });
    }
    asked.into_inner()
}

/// The configuration reference: one table under `## Every key`, one row per key, its first
/// cell the key's name in backticks and its last the section files that read it.
const REFERENCE: &str = include_str!("../../docs/configuration.md");

/// Each key row of the reference: the key's name and its row's last cell.
fn keys_the_reference_lists() -> Vec<(String, String)> {
    let table = REFERENCE
        .split("\n## ")
        .find(|section| section.starts_with("Every key"))
        .expect("docs/configuration.md has no `## Every key` section");
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            let name = cells[0].trim().trim_matches('`').to_owned();
            let sections = cells.last().copied().unwrap_or_default().to_owned();
            (name, sections)
        })
        .collect()
}

#[test]
fn the_configuration_reference_lists_exactly_the_keys_the_code_reads() {
    let read = keys_the_code_reads();
    let listed = keys_the_reference_lists();
    let listed_names: std::collections::BTreeSet<String> =
        listed.iter().map(|(name, _)| name.clone()).collect();
    let unlisted: Vec<&String> = read.difference(&listed_names).collect();
    assert!(
        unlisted.is_empty(),
        "the code reads {unlisted:?}, which docs/configuration.md does not list: add a row to \
         its `## Every key` table"
    );
    let unread: Vec<&String> = listed_names.difference(&read).collect();
    assert!(
        unread.is_empty(),
        "docs/configuration.md lists {unread:?}, which the code never reads: remove the row, \
         or read the key in src/config/"
    );
    assert_eq!(
        listed.len(),
        listed_names.len(),
        "docs/configuration.md lists a key twice"
    );
    // Every key the code reads has its place in the order problems are reported in.
    let ordered: std::collections::BTreeSet<String> =
        super::keys::ORDER.iter().map(|k| (*k).to_owned()).collect();
    assert_eq!(read, ordered, "src/config/mod.rs keys::ORDER");
}

#[test]
fn the_reference_names_a_section_that_reads_each_key() {
    let sources = [
        ("src/config/delivery.rs", include_str!("delivery.rs")),
        ("src/config/webhook.rs", include_str!("webhook.rs")),
        ("src/config/senders.rs", include_str!("senders.rs")),
        ("src/config/queue.rs", include_str!("queue.rs")),
        ("src/config/gate.rs", include_str!("gate.rs")),
        ("src/config/api.rs", include_str!("api.rs")),
        ("src/config/admin.rs", include_str!("admin.rs")),
        ("src/config/alerts.rs", include_str!("alerts.rs")),
        ("src/config/reconcile.rs", include_str!("reconcile.rs")),
        ("src/config/mod.rs", include_str!("mod.rs")),
    ];
    for (name, sections) in keys_the_reference_lists() {
        let named: Vec<&(&str, &str)> = sources
            .iter()
            .filter(|(path, _)| sections.contains(path))
            .collect();
        assert!(
            !named.is_empty(),
            "docs/configuration.md: the row of {name} names no section file of src/config/"
        );
        for (path, text) in named {
            assert!(
                text.contains(&name),
                "docs/configuration.md says {path} reads {name}, but it never names it"
            );
        }
    }
}

/// A row of the reference's `## Every key` table, cell by cell.
struct Row {
    key: String,
    default: String,
    bounds: String,
}

fn rows() -> Vec<Row> {
    let table = REFERENCE
        .split("\n## ")
        .find(|section| section.starts_with("Every key"))
        .expect("docs/configuration.md has no `## Every key` section");
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            Row {
                key: cells[0].trim().trim_matches('`').to_owned(),
                default: cells[1].trim().to_owned(),
                bounds: cells[2].trim().to_owned(),
            }
        })
        .collect()
}

/// Every door and every sender on, each in its own default mode, so that every key is read.
const EVERY_DOOR: &[(&str, &str)] = &[
    ("STRIPE_WEBHOOK_SECRET", "whsec_a"),
    ("ORIGIN_URL", "http://127.0.0.1:9000/hook"),
    (
        "STANDARD_WEBHOOK_SECRET",
        "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
    ),
    ("GITHUB_WEBHOOK_SECRET", "g"),
    ("SHOPIFY_WEBHOOK_SECRET", "s"),
    ("API_ORIGIN_URL", "http://127.0.0.1:9000"),
    ("ADMIN_TOKEN", "an-admin-token-long-enough"),
    ("ALERT_URL", "https://alerts.example/hook"),
    (
        "ALERT_SECRET",
        "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
    ),
];

/// The configuration of [`EVERY_DOOR`] with `extra` set over it.
fn every_door_with(extra: &[(&str, &str)]) -> Result<Config, Vec<ConfigProblem>> {
    let mut map: HashMap<&str, &str> = EVERY_DOOR.iter().copied().collect();
    map.extend(extra.iter().copied());
    Config::load(|key| map.get(key).map(|v| (*v).to_owned()))
}

/// The value a default cell gives: a number, a flag, a word in backticks, or the value after
/// "else" (the default when the key it falls back to is unset). `None` for a default that is
/// no value of its own: none, unset, required, or another key's value.
fn documented_default(cell: &str) -> Option<String> {
    if let Some(after) = cell.split("else `").nth(1) {
        return after.split('`').next().map(str::to_owned);
    }
    let first = cell.split([' ', ';', ',']).next().unwrap_or_default();
    if first.parse::<f64>().is_ok() || first == "true" || first == "false" {
        return Some(first.to_owned());
    }
    let word = first.trim_matches('`');
    let other_key = word.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    let a_value = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    (first.starts_with('`') && first.ends_with('`') && !word.is_empty() && a_value && !other_key)
        .then(|| word.to_owned())
}

#[test]
fn each_documented_default_is_the_code_s_default() {
    let defaults = format!("{:?}", every_door_with(&[]).unwrap());
    let mut checked = Vec::new();
    for row in rows() {
        let Some(value) = documented_default(&row.default) else {
            continue;
        };
        let set = every_door_with(&[(&row.key, &value)]).unwrap_or_else(|problems| {
            panic!(
                "docs/configuration.md says {}'s default is {value}, which the code refuses: \
                 {problems:?}",
                row.key
            )
        });
        assert_eq!(
            format!("{set:?}"),
            defaults,
            "docs/configuration.md says {}'s default is {value}, but setting it to {value} \
             changes the configuration: the code's default differs",
            row.key
        );
        checked.push(row.key);
    }
    assert!(
        checked.len() >= 25,
        "only {} documented defaults were checked: {checked:?}",
        checked.len()
    );
}

/// What a bounds cell promises that a refusal's text must repeat: `1 to 25000` (a whole
/// number from 1 to 25000), `above 0, at most 8784` (hours), `at most 604800`, `true` or
/// `false`, `sync` or `queue`. `None` for a cell of prose (URLs, secrets, header names).
fn documented_range(cell: &str) -> Option<String> {
    let first = cell.split(';').next().unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    match words.as_slice() {
        [a, "to", b, ..] if a.parse::<u64>().is_ok() => {
            Some(format!("from {a} to {}", b.trim_end_matches(',')))
        }
        ["above", "0,", "at", "most", max, ..] => Some(format!("above 0 and at most {max}")),
        ["at", "least", _, "at", "most", max, ..] => Some(format!("to {max}")),
        ["`true`", "or", "`false`"] => Some("`true` or `false`".into()),
        ["`sync`", "or", "`queue`"] => Some("`sync` or `queue`".into()),
        _ => None,
    }
}

#[test]
fn each_documented_range_is_the_range_the_code_checks() {
    let mut checked = Vec::new();
    for row in rows() {
        let Some(promised) = documented_range(&row.bounds) else {
            continue;
        };
        let problems = every_door_with(&[(&row.key, "not-a-value")]).unwrap_err();
        let refusal = problems
            .iter()
            .find(|problem| problem.key == row.key)
            .unwrap_or_else(|| panic!("{} accepts `not-a-value`: {problems:?}", row.key));
        assert!(
            refusal.problem.contains(&promised),
            "docs/configuration.md says {} is {:?}, but the code refuses values outside \
             \"{}\"",
            row.key,
            row.bounds,
            refusal.problem
        );
        checked.push(row.key);
    }
    assert!(
        checked.len() >= 25,
        "only {} documented ranges were checked: {checked:?}",
        checked.len()
    );
}

#[test]
fn wrangler_toml_ships_the_documented_defaults() {
    let toml = include_str!("../../wrangler.toml");
    let vars = toml
        .split("\n[vars]\n")
        .nth(1)
        .expect("wrangler.toml has a [vars] table");
    let rows = rows();
    let mut shipped = 0;
    for line in vars.lines().take_while(|line| !line.starts_with('[')) {
        let Some((key, value)) = line.split_once(" = ").filter(|_| !line.starts_with('#')) else {
            continue;
        };
        let row = rows
            .iter()
            .find(|row| row.key == key.trim())
            .unwrap_or_else(|| {
                panic!("wrangler.toml sets {key}, which the reference does not list")
            });
        let value = value.trim().trim_matches('"');
        let documented = if value.is_empty() {
            row.default.starts_with("`\"\"`")
        } else {
            documented_default(&row.default).as_deref() == Some(value)
        };
        assert!(
            documented,
            "wrangler.toml sets {key} = {value:?}, but docs/configuration.md gives its default as {:?}",
            row.default
        );
        shipped += 1;
    }
    assert!(shipped >= 3, "{shipped} vars read from wrangler.toml");
}
