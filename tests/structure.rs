//! The source's shape, read with the Rust parser itself (`syn`): the modules import only the
//! layers below their own, no module imports another that imports it back (by `crate::`,
//! `super::` or `self::` paths, at every depth), and no function outside tests runs past 60
//! lines.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// The top-level modules, bottom layer first. A module may use the modules of the layers below
/// its own, never one of its own layer or above: so no import runs up, and no two modules
/// import each other.
const LAYERS: &[&[&str]] = &[
    // The test-only switches that take a fix out again (off in every build of the worker).
    &["reverts"],
    // What every rule builds on: MACs, secrets, times as text, rate limiters' verdicts.
    &["mac", "secret", "rfc3339", "rate_limit"],
    // The senders (each one's signature and id rules) and what an origin's answer means.
    &["providers", "origin"],
    // The claim record and its rules.
    &["claim"],
    // Every configuration key.
    &["config"],
    // The log line.
    &["log_line"],
    // Reconciliation's rules: the window, the cursor, the senders' lists, what a run counts.
    &["reconcile"],
    // What the runtime does for every Durable Object.
    &["object"],
    // The failure index (one Durable Object): its rules, its notifications and its sequences.
    &["failure_index"],
    // The origin's gate (one Durable Object per origin): pauses, caps, the breaker.
    &["origin_gate"],
    // The claim authority (one Durable Object per key): its messages, the attempt driver, its
    // sequences and their executor.
    &["claim_authority"],
    // What the doors share: their answers.
    &["answer"],
    // Which door a path leads to.
    &["routing"],
    // What the doors ask of the runtime.
    &["runtime"],
    // The reconciler: a reconciliation's sequence over the runtime, called and scheduled.
    &["reconciler"],
    // The doors' rules.
    &["webhook", "idempotency", "admin"],
    // The test routes, which show records as the admin API does, and `/healthz`, which shows
    // the operator more than anyone else.
    &["test_routes", "health"],
    // The adapter to the runtime.
    &["worker"],
];

/// The longest function outside tests, in lines.
const MAX_FUNCTION_LINES: usize = 60;

fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file with its top-level module (`claim` for `src/claim/engine.rs`), test files
/// (`tests.rs`, `tests/…`) left out.
fn modules() -> Vec<(String, PathBuf, syn::File)> {
    let mut files = Vec::new();
    source_files(&src(), &mut files);
    files
        .into_iter()
        .filter(|path| {
            let relative = path.strip_prefix(src()).unwrap();
            !relative
                .components()
                .any(|part| part.as_os_str() == "tests.rs" || part.as_os_str() == "tests")
        })
        .filter_map(|path| {
            let relative = path.strip_prefix(src()).unwrap();
            let first = relative.components().next()?.as_os_str().to_str()?;
            let module = first.trim_end_matches(".rs").to_owned();
            if module == "lib" {
                return None;
            }
            let text = fs::read_to_string(&path).expect("a source file is readable");
            let file = syn::parse_file(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            Some((module, path, file))
        })
        .collect()
}

/// True for an item marked `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// What a file refers to and how long its functions are, tests left out.
#[derive(Default)]
struct Reader {
    /// Top-level modules named as `crate::…`.
    uses: Vec<String>,
    /// Functions: name, first line, lines.
    functions: Vec<(String, usize, usize)>,
}

impl Reader {
    fn function(&mut self, name: &syn::Ident, span: proc_macro2::Span) {
        let lines = span.end().line - span.start().line + 1;
        self.functions
            .push((name.to_string(), span.start().line, lines));
    }
}

impl<'ast> Visit<'ast> for Reader {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test(&item.attrs) {
            visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            self.function(&item.sig.ident, item.span());
            visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            self.function(&item.sig.ident, item.span());
            visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_use_tree(&mut self, tree: &'ast syn::UseTree) {
        if let syn::UseTree::Path(path) = tree {
            if path.ident == "crate" {
                let mut next = &*path.tree;
                match next {
                    syn::UseTree::Path(inner) => self.uses.push(inner.ident.to_string()),
                    syn::UseTree::Name(inner) => self.uses.push(inner.ident.to_string()),
                    syn::UseTree::Group(group) => {
                        for item in &group.items {
                            next = item;
                            match next {
                                syn::UseTree::Path(inner) => {
                                    self.uses.push(inner.ident.to_string())
                                }
                                syn::UseTree::Name(inner) => {
                                    self.uses.push(inner.ident.to_string())
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                return;
            }
        }
        visit::visit_use_tree(self, tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let mut segments = path.segments.iter();
        if segments.next().is_some_and(|first| first.ident == "crate") {
            if let Some(module) = segments.next() {
                self.uses.push(module.ident.to_string());
            }
        }
        visit::visit_path(self, path);
    }
}

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("src/{module} is in no layer: add it to LAYERS"))
}

#[test]
fn every_import_runs_down_the_layers() {
    let mut wrong = Vec::new();
    let mut edges = 0;
    for (module, path, file) in modules() {
        let mut reader = Reader::default();
        reader.visit_file(&file);
        for used in reader.uses {
            if used == module {
                continue;
            }
            edges += 1;
            if layer_of(&used) >= layer_of(&module) {
                wrong.push(format!(
                    "{} ({module}) uses crate::{used}, which is not below it",
                    path.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    assert!(edges > 50, "the check read the imports ({edges} seen)");
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports up the layers:\n{}",
        wrong.join("\n")
    );
}

/// The module path of a source file: `["failure_index", "index"]` for `src/failure_index/index.rs`,
/// `["failure_index"]` for `src/failure_index/mod.rs`.
fn module_path(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts
}

/// Every path a file names (in `use` trees and in code, not inside macros, which the parser
/// does not read), made absolute from its module, tests and inline test modules left out:
/// `crate::`, `super::` and `self::` paths, and paths that start with a module's own child
/// (`store::IndexStore` in `failure_index/mod.rs`). A path that starts with another name is a
/// crate's or an item in scope. Its `pub use` items are kept as aliases: what a module
/// re-exports is the defining module's.
struct Paths<'k> {
    /// Every module of the crate (files and inline modules).
    known: &'k BTreeSet<Vec<String>>,
    /// The module the file is, then the inline modules being read.
    here: Vec<String>,
    /// Whether the `use` item being read is `pub`.
    public: bool,
    /// Absolute paths named, each with the module that names it.
    found: Vec<(Vec<String>, Vec<String>)>,
    /// Re-exports: the path a module makes public (`failure_index::IndexStore`), and what it names.
    aliases: Vec<(Vec<String>, Vec<String>)>,
}

impl<'k> Paths<'k> {
    fn new(known: &'k BTreeSet<Vec<String>>, here: Vec<String>) -> Self {
        Paths {
            known,
            here,
            public: false,
            found: Vec::new(),
            aliases: Vec::new(),
        }
    }

    /// `segments` made absolute, or `None` when they name no module of this crate.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let mut absolute = self.here.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                absolute.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|first| first == "super") {
                    absolute.pop();
                    rest = &rest[1..];
                }
            }
            Some(child) => {
                let mut below = self.here.clone();
                below.push(child.to_owned());
                if !self.known.contains(&below) {
                    return None;
                }
            }
            None => return None,
        }
        absolute.extend(rest.iter().cloned());
        Some(absolute)
    }

    /// Notes the path `segments` (a `use` of it as `name`, when in a `use` item).
    fn resolve(&mut self, segments: &[String], name: Option<&str>) {
        // A lone `self` is a method's receiver (or a local name), not a module.
        if segments.len() < 2 {
            return;
        }
        let Some(absolute) = self.absolute(segments) else {
            return;
        };
        if let (true, Some(name)) = (self.public, name) {
            let mut alias = self.here.clone();
            alias.push(name.to_owned());
            self.aliases.push((alias, absolute.clone()));
        }
        self.found.push((self.here.clone(), absolute));
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let name = name.ident.to_string();
                prefix.push(name.clone());
                let named = if name == "self" {
                    prefix.len() - 1
                } else {
                    prefix.len()
                };
                let alias = prefix[named - 1].clone();
                self.resolve(&prefix[..named], Some(&alias));
                prefix.pop();
            }
            syn::UseTree::Rename(rename) => {
                prefix.push(rename.ident.to_string());
                self.resolve(&prefix.clone(), Some(&rename.rename.to_string()));
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.resolve(&prefix.clone(), None),
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) || item.content.is_none() {
            return;
        }
        self.here.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.here.pop();
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !is_test(&item.attrs) {
            self.public = matches!(item.vis, syn::Visibility::Public(_));
            self.use_tree(&mut Vec::new(), &item.tree);
            self.public = false;
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.resolve(&segments, None);
        visit::visit_path(self, path);
    }
}

/// The inline modules (outside tests) of a file whose module is `here`.
struct InlineModules {
    here: Vec<String>,
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for InlineModules {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) || item.content.is_none() {
            return;
        }
        self.here.push(item.ident.to_string());
        self.found.push(self.here.clone());
        visit::visit_item_mod(self, item);
        self.here.pop();
    }
}

/// True when `a` is `b`, or holds it, or is held by it: a module and its own submodules may
/// name each other (a parent re-exports its children; a child uses its parent's types).
fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// `path` with every re-export on its way replaced by what it names (`failure_index::IndexStore`
/// becomes `failure_index::store::IndexStore`), so a path through a parent's `pub use` counts as
/// a path to the module that defines the item.
fn through_aliases(
    mut path: Vec<String>,
    aliases: &BTreeMap<Vec<String>, Vec<String>>,
    known: &BTreeSet<Vec<String>>,
) -> Vec<String> {
    for _ in 0..8 {
        // A module's name followed by more of the path is the module, even where a function of
        // the same name is re-exported (`failure_index::entry` the module, `failure_index::entry` the
        // function).
        let hit = (1..=path.len())
            .rev()
            .filter(|&n| n == path.len() || !known.contains(&path[..n]))
            .find_map(|n| aliases.get(&path[..n]).map(|target| (n, target)));
        match hit {
            Some((n, target)) if target != &path[..n] => {
                let mut next = target.clone();
                next.extend(path[n..].iter().cloned());
                path = next;
            }
            _ => break,
        }
    }
    path
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let mut parsed = Vec::new();
    let mut known: BTreeSet<Vec<String>> = BTreeSet::new();
    for (_, path, file) in modules() {
        let module = module_path(&path);
        let mut inline = InlineModules {
            here: module.clone(),
            found: Vec::new(),
        };
        inline.visit_file(&file);
        known.extend(inline.found);
        known.insert(module.clone());
        parsed.push((module, file));
    }
    parsed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut found = Vec::new();
    let mut aliases = BTreeMap::new();
    for (module, file) in &parsed {
        let mut paths = Paths::new(&known, module.clone());
        paths.visit_file(file);
        found.extend(paths.found);
        aliases.extend(paths.aliases);
    }
    assert!(
        found.len() > 500,
        "the check read the paths ({} seen)",
        found.len()
    );
    assert!(
        aliases.contains_key(&vec!["failure_index".to_owned(), "IndexStore".to_owned()]),
        "the check reads re-exports"
    );
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, to) in found {
        let to = through_aliases(to, &aliases, &known);
        // The module a path reaches: its longest prefix that is a module.
        let target = (1..=to.len())
            .rev()
            .map(|n| to[..n].to_vec())
            .find(|prefix| known.contains(prefix));
        if let Some(target) = target.filter(|target| !nested(&from, target)) {
            if std::env::var("SHOW").is_ok_and(|v| v == from.join("::")) {
                eprintln!(
                    "EDGE {} -> {} via {}",
                    from.join("::"),
                    target.join("::"),
                    to.join("::")
                );
            }
            edges.entry(from).or_default().insert(target);
        }
    }
    assert!(
        edges.contains_key(&vec!["worker".to_owned(), "runtime".to_owned()]),
        "the check sees `super::` imports between sibling modules"
    );
    let mut cycles = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&Vec<String>> = edges[start].iter().collect();
        while let Some(next) = stack.pop() {
            if next == start {
                cycles.push(format!("{} reaches itself", start.join("::")));
                break;
            }
            if seen.insert(next.clone()) {
                stack.extend(edges.get(next).into_iter().flatten());
            }
        }
        for to in &edges[start] {
            if start < to && edges.get(to).is_some_and(|back| back.contains(start)) {
                cycles.push(format!("{} <-> {}", start.join("::"), to.join("::")));
            }
        }
    }
    cycles.sort();
    assert!(
        cycles.is_empty(),
        "modules that import each other:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_function_outside_tests_runs_past_sixty_lines() {
    let mut long = Vec::new();
    let mut seen = 0;
    for (_, path, file) in modules() {
        let mut reader = Reader::default();
        reader.visit_file(&file);
        seen += reader.functions.len();
        for (name, line, lines) in reader.functions {
            if lines > MAX_FUNCTION_LINES {
                long.push(format!(
                    "{}:{line} {name}: {lines} lines",
                    path.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    assert!(seen > 300, "the check read the functions ({seen} seen)");
    assert!(
        long.is_empty(),
        "functions longer than {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The most lines of code `src/worker/` may hold: comments and blank lines do not count, so
/// that no comment is ever cut to fit (see the developing guide). Lower it whenever a change
/// moves work out of the adapter. (1,360 until the origin's gate, a third object, brought its
/// adapter: `src/worker/origin_gate/` and the attempt's path through it; 1,690 until
/// reconciliation brought the requests to the senders' APIs and the Cron Trigger's entry.)
const MAX_WORKER_LINES: usize = 1_760;

/// The lines of `text` that hold code: neither blank nor only a comment.
fn code_lines(text: &str) -> usize {
    text.lines()
        .map(str::trim_start)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .count()
}

#[test]
fn the_worker_adapter_does_not_grow() {
    let mut lines = 0;
    let mut files = 0;
    for (module, path, _) in modules() {
        if module == "worker" {
            files += 1;
            lines += code_lines(&fs::read_to_string(&path).unwrap());
        }
    }
    assert!(files > 20, "the check read the adapter ({files} files)");
    assert!(
        lines <= MAX_WORKER_LINES,
        "src/worker/ holds {lines} lines of code, more than {MAX_WORKER_LINES}: move the decision \
         into a pure module"
    );
}

/// The public types a file declares outside its tests, and every `Outcome::Refused("…")` whose
/// code is written out rather than taken from the error it reports.
#[derive(Default)]
struct Names {
    /// Public structs, enums, traits and type aliases: name and line.
    types: Vec<(String, usize)>,
    /// How many refusal outcomes the file builds.
    refusals: usize,
    /// Lines holding a refusal outcome with a literal code.
    literal_refusals: Vec<usize>,
}

impl Names {
    fn public(&mut self, vis: &syn::Visibility, name: &syn::Ident) {
        if matches!(vis, syn::Visibility::Public(_)) {
            self.types
                .push((name.to_string(), name.span().start().line));
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test(&item.attrs) {
            visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_struct(&mut self, item: &'ast syn::ItemStruct) {
        self.public(&item.vis, &item.ident);
        visit::visit_item_struct(self, item);
    }

    fn visit_item_enum(&mut self, item: &'ast syn::ItemEnum) {
        self.public(&item.vis, &item.ident);
        visit::visit_item_enum(self, item);
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        self.public(&item.vis, &item.ident);
        visit::visit_item_trait(self, item);
    }

    fn visit_item_type(&mut self, item: &'ast syn::ItemType) {
        self.public(&item.vis, &item.ident);
        visit::visit_item_type(self, item);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(function) = &*call.func {
            let names: Vec<String> = function
                .path
                .segments
                .iter()
                .map(|segment| segment.ident.to_string())
                .collect();
            let literal = matches!(
                call.args.first(),
                Some(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(_),
                    ..
                }))
            );
            if names.ends_with(&["Outcome".to_owned(), "Refused".to_owned()]) {
                self.refusals += 1;
                if literal {
                    self.literal_refusals
                        .push(function.path.segments[0].ident.span().start().line);
                }
            }
        }
        visit::visit_expr_call(self, call);
    }
}

#[test]
fn no_two_public_types_share_a_name() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut count = 0;
    for (_, path, file) in modules() {
        let mut names = Names::default();
        names.visit_file(&file);
        for (name, line) in names.types {
            count += 1;
            let place = format!("{}:{line}", path.strip_prefix(src()).unwrap().display());
            seen.entry(name).or_default().push(place);
        }
    }
    assert!(count > 100, "the check read the types ({count} seen)");
    let twice: Vec<String> = seen
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(name, places)| format!("{name}: {}", places.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "one name, one idea: these public types share a name\n{}",
        twice.join("\n")
    );
}

#[test]
fn a_refusal_logs_the_code_of_its_error_never_a_word_of_its_own() {
    let mut found = Vec::new();
    let mut refusals = 0;
    for (_, path, file) in modules() {
        let mut names = Names::default();
        names.visit_file(&file);
        refusals += names.refusals;
        for line in names.literal_refusals {
            found.push(format!(
                "{}:{line}",
                path.strip_prefix(src()).unwrap().display()
            ));
        }
    }
    assert!(
        refusals >= 5,
        "the check read the refusals ({refusals} seen)"
    );
    assert!(
        found.is_empty(),
        "Outcome::Refused takes the code of the typed error it reports (or a constant of \
         answer.rs); a new kind of outcome is a variant of Outcome:\n{}",
        found.join("\n")
    );
}
