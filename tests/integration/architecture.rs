//! The source tree's layers (`docs/architecture.md`): every module of `src/` imports only from
//! its own layer or the layers below it, and the modules of a layer import each other without a
//! circle. Test code (`#[cfg(test)]` items and the modules they declare) may reach anywhere.
//!
//! The check reads the source as text: every `crate::`/`super::` path and every `use` tree,
//! resolved to the module it names (the longest module path that exists; a name the crate
//! root re-exports counts as the module it comes from).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom to top: a module may import from its own layer and those before it.
const LAYERS: [&str; 13] = [
    "base",
    "config",
    "io",
    "diff",
    "physics",
    "experiment",
    "scene",
    "render",
    "gradients",
    "kernel",
    "engine",
    "refine",
    "app",
];

/// One source file as a module: its path in the crate (`["kernel", "native", "vjp"]`) and its
/// text without test code and comments.
struct Module {
    path: Vec<String>,
    file: String,
    lines: Vec<String>,
}

/// A reference from one module to another, at a line of the first.
#[derive(Debug)]
struct Edge {
    from: String,
    to: String,
    at: String,
}

#[test]
fn every_module_imports_only_from_its_layer_or_below_and_no_layer_has_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_tree(&root, &root, &mut files);
    let problems = check(&files);
    assert!(problems.is_empty(), "the layers are broken:\n{}", problems.join("\n"));
}

#[test]
fn the_check_finds_an_upward_import_and_a_circle() {
    let file = |path: &str, text: &str| (path.to_string(), text.to_string());
    let upward = [
        file("lib.rs", "pub mod physics;\npub mod engine;\n"),
        file("physics/mod.rs", "use crate::engine::Engine;\n"),
        file("engine/mod.rs", "pub struct Engine;\n"),
    ];
    let problems = check(&upward);
    assert!(problems.iter().any(|p| p.contains("physics -> engine")), "{problems:?}");
    let circle = [
        file("lib.rs", "pub mod render;\n"),
        file("render/mod.rs", "pub mod drive;\npub mod image;\n"),
        file("render/drive.rs", "use super::image::Image;\n"),
        file(
            "render/image.rs",
            "use crate::render::drive::{self, Spans};\npub struct Image;\n",
        ),
    ];
    let problems = check(&circle);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("circle") && p.contains("render::drive")),
        "{problems:?}"
    );
    // test code may import from anywhere
    let test_only = [
        file("lib.rs", "pub mod physics;\npub mod engine;\n"),
        file(
            "physics/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::engine::Engine;\n}\n",
        ),
        file("engine/mod.rs", "pub struct Engine;\n"),
    ];
    assert_eq!(check(&test_only), Vec::<String>::new());
    // and so may the files of a test module's folder, which are in no layer
    let test_folder = [
        file(
            "lib.rs",
            "pub mod physics;\npub mod engine;\n#[cfg(test)]\nmod tests;\n",
        ),
        file("tests/mod.rs", "mod kernel;\n"),
        file("tests/kernel.rs", "use crate::engine::Engine;\n"),
        file("physics/mod.rs", ""),
        file("engine/mod.rs", "pub struct Engine;\n"),
    ];
    assert_eq!(check(&test_folder), Vec::<String>::new());
    // a folder that is not a test module's stays checked
    let not_tests = [
        file("lib.rs", "pub mod physics;\npub mod engine;\n"),
        file("physics/mod.rs", "mod kernel;\n"),
        file("physics/kernel.rs", "use crate::engine::Engine;\n"),
        file("engine/mod.rs", "pub struct Engine;\n"),
    ];
    assert!(check(&not_tests)
        .iter()
        .any(|p| p.contains("physics::kernel -> engine")));
}

/// Every `.rs` file under `dir` as (path relative to `root`, text).
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// The broken rules of the tree `files` (paths relative to `src/`, `lib.rs` the root).
fn check(files: &[(String, String)]) -> Vec<String> {
    let test_files = test_module_files(files);
    let modules: Vec<Module> = files
        .iter()
        .filter(|(f, _)| !f.starts_with("bin/") && !is_test_file(f, &test_files))
        .map(|(f, text)| Module {
            path: module_path(f),
            file: f.clone(),
            lines: strip(&without_test_items(text)),
        })
        .collect();
    let known: BTreeSet<String> = modules.iter().map(|m| m.path.join("::")).collect();
    let root_names = root_reexports(&modules);
    let mut problems = Vec::new();
    let mut edges = Vec::new();
    for m in modules.iter().filter(|m| !m.path.is_empty()) {
        if !LAYERS.contains(&m.path[0].as_str()) {
            problems.push(format!(
                "src/{}: `{}` is in no layer (add it to LAYERS and docs/architecture.md)",
                m.file, m.path[0]
            ));
            continue;
        }
        for (line, target) in references(m) {
            if let Some(to) = resolve(&target, &known, &root_names) {
                edges.push(Edge {
                    from: m.path.join("::"),
                    to,
                    at: format!("src/{}:{}", m.file, line),
                });
            }
        }
    }
    for e in &edges {
        if layer(&e.to) > layer(&e.from) {
            problems.push(format!("{}: {} -> {} imports from a layer above", e.at, e.from, e.to));
        }
    }
    problems.extend(circles(&edges));
    problems
}

/// The module path of file `f`: `kernel/native/mod.rs` → `kernel::native`, `lib.rs` → root.
fn module_path(f: &str) -> Vec<String> {
    let mut parts: Vec<String> = f.trim_end_matches(".rs").split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The layer index of module path `m`.
fn layer(m: &str) -> usize {
    let top = m.split("::").next().unwrap_or("");
    LAYERS.iter().position(|l| *l == top).unwrap_or(0)
}

/// Whether file `f` is test code: a file of [`test_module_files`], or any file in the folder
/// of one (`tests/mod.rs` makes `tests/kernel.rs` test code).
fn is_test_file(f: &str, test_files: &BTreeSet<String>) -> bool {
    test_files
        .iter()
        .any(|t| t == f || t.strip_suffix("mod.rs").is_some_and(|dir| f.starts_with(dir)))
}

/// The files of modules declared under a `#[cfg(... test ...)]` attribute (`mod tests;`).
fn test_module_files(files: &[(String, String)]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (f, text) in files {
        let dir = match f.rsplit_once('/') {
            Some((d, "mod.rs")) => format!("{d}/"),
            Some((d, name)) => format!("{d}/{}/", name.trim_end_matches(".rs")),
            None if f == "lib.rs" => String::new(),
            None => format!("{}/", f.trim_end_matches(".rs")),
        };
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if !is_test_cfg(l) {
                continue;
            }
            let next = lines[i + 1..]
                .iter()
                .find(|n| !n.trim().starts_with("#["))
                .map(|n| n.trim());
            if let Some(name) = next
                .and_then(|n| n.strip_prefix("mod "))
                .and_then(|n| n.strip_suffix(';'))
            {
                out.insert(format!("{dir}{name}.rs"));
                out.insert(format!("{dir}{name}/mod.rs"));
            }
        }
    }
    out
}

fn is_test_cfg(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("#[cfg(")
        && t.replace(['(', ')', ',', ' '], " ")
            .split_whitespace()
            .any(|w| w == "test")
}

/// `text` without the items under a test `cfg` attribute (to their `;` or closing brace).
fn without_test_items(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = find_test_cfg(rest) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        rest = &rest[item_end(rest)..];
    }
    out.push_str(rest);
    out
}

/// The byte offset of the first line of `text` that is a test `cfg` attribute.
fn find_test_cfg(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if is_test_cfg(line) {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// The end of the item that starts at `text` (its attributes first): after its `;` when one
/// comes before any `{`, else after the brace that closes its first block. Braces inside
/// string and character literals do not count.
fn item_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    // past the attribute lines
    while text[i..].trim_start().starts_with("#[") {
        i += text[i..].find('\n').map_or(text.len() - i, |n| n + 1);
    }
    let mut depth = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'r' if matches!(bytes.get(i + 1), Some(b'#' | b'"')) && !ident_char(bytes, i) => {
                i = raw_string_end(bytes, i)
            }
            b'"' => i = string_end(bytes, i),
            b'\'' if bytes.get(i + 2) == Some(&b'\'') || bytes.get(i + 1) == Some(&b'\\') => {
                i += bytes[i + 1..].iter().position(|&b| b == b'\'').map_or(1, |p| p + 2);
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Whether the byte before `i` continues an identifier (so `r` at `i` is not a raw string's).
fn ident_char(bytes: &[u8], i: usize) -> bool {
    i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
}

/// The index of the last byte of the raw string literal (`r#"…"#`) that opens at `start`.
fn raw_string_end(bytes: &[u8], start: usize) -> usize {
    let hashes = bytes[start + 1..].iter().take_while(|&&b| b == b'#').count();
    let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
    let body = start + 2 + hashes;
    bytes[body.min(bytes.len())..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map_or(bytes.len(), |p| body + p + close.len() - 1)
}

/// The index of the closing quote of the string literal that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() && bytes[i] != b'"' {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    i
}

/// The lines of `text` with comments removed (line comments; doc comments included).
fn strip(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) if !l[..at].contains('"') => l[..at].to_string(),
            _ => l.to_string(),
        })
        .collect()
}

/// Every path module `m` names, with its line: `crate::`/`$crate::`/`super::` paths in the
/// code, and the full paths of its `use` trees (`use crate::{a::b, c}`, `use super::x::{..}`,
/// `use child::..` in a module's own file), made absolute from the crate root.
fn references(m: &Module) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let text = m.lines.join("\n");
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    for (offset, stmt) in use_statements(&text) {
        for path in expand_use_tree(&stmt) {
            if let Some(abs) = absolute(&path, m) {
                out.push((line_of(offset), abs));
            }
        }
    }
    for (n, line) in m.lines.iter().enumerate() {
        for path in plain_paths(line) {
            if let Some(abs) = absolute(&path, m) {
                out.push((n + 1, abs));
            }
        }
    }
    out
}

/// The `use` statements of `text`, each as the tree after `use` up to its `;`, with the
/// offset where it starts.
fn use_statements(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let body = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| t.strip_prefix(p));
        if let Some(body) = body {
            let start = offset + (line.len() - t.len()) + (t.len() - body.len());
            let end = text[start..].find(';').map_or(text.len(), |e| start + e);
            out.push((offset, compact(&text[start..end])));
        }
        offset += line.len();
    }
    out
}

/// `tree` with single spaces, and none around `::`, braces and commas (`as` keeps its).
fn compact(tree: &str) -> String {
    let mut t = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    for (from, to) in [
        (" ::", "::"),
        (":: ", "::"),
        ("{ ", "{"),
        (" {", "{"),
        (" }", "}"),
        (", ", ","),
        (" ,", ","),
    ] {
        t = t.replace(from, to);
    }
    t
}

/// The paths of a use tree without spaces (`crate::{a::{b,c},d}` → `crate::a::b`,
/// `crate::a::c`, `crate::d`); `self` inside braces names the prefix.
fn expand_use_tree(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).to_string()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut out = Vec::new();
    for part in split_top_level(inner) {
        for sub in expand_use_tree(&part) {
            let joined = match sub.as_str() {
                "self" => prefix.to_string(),
                _ => format!("{prefix}::{sub}"),
            };
            out.push(joined);
        }
    }
    out
}

/// `s` split at its commas outside braces, empty parts left out.
fn split_top_level(s: &str) -> Vec<String> {
    let (mut parts, mut depth, mut current) = (Vec::new(), 0, String::new());
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The `crate::…` and `super::…` paths written in `line` outside `use` statements.
fn plain_paths(line: &str) -> Vec<String> {
    let t = line.trim_start();
    if t.starts_with("use ") || t.contains(" use ") && t.starts_with("pub") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = line[from..].find(start) {
            let begin = from + at;
            let boundary = line[..begin]
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let end = line[begin..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(line.len(), |e| begin + e);
            if boundary {
                out.push(line[begin..end].trim_end_matches(':').to_string());
            }
            from = end.max(begin + start.len());
        }
    }
    out
}

/// `path` as segments from the crate root, seen from module `m`; `None` for paths outside the
/// crate (`std::…`, `burn::…`).
fn absolute(path: &str, m: &Module) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (&first, rest) = segs.split_first()?;
    let mut base: Vec<String> = match first {
        "crate" | "$crate" => Vec::new(),
        "super" => {
            let mut b = m.path.clone();
            b.pop();
            let mut rest = rest;
            while rest.first() == Some(&"super") {
                b.pop();
                rest = &rest[1..];
            }
            return Some(b.into_iter().chain(rest.iter().map(|s| s.to_string())).collect());
        }
        "self" => m.path.clone(),
        // a child module named from its parent's file (`use flags::Opt;` in args/mod.rs)
        child => {
            let mut b = m.path.clone();
            b.push(child.to_string());
            return Some(b.into_iter().chain(rest.iter().map(|s| s.to_string())).collect());
        }
    };
    base.extend(rest.iter().map(|s| s.to_string()));
    Some(base)
}

/// The names the crate root re-exports, each with the path it comes from.
fn root_reexports(modules: &[Module]) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(root) = modules.iter().find(|m| m.path.is_empty()) else {
        return out;
    };
    let text = root.lines.join("\n");
    for (_, stmt) in use_statements(&text) {
        for path in expand_use_tree(&stmt) {
            let segs: Vec<String> = path.split("::").map(String::from).collect();
            if let Some(name) = segs.last() {
                out.insert(name.clone(), segs.clone());
            }
        }
    }
    out
}

/// The module `path` names: the longest of its prefixes that is a module, through the crate
/// root's re-exports; `None` for the root itself and for paths outside the crate's modules.
fn resolve(path: &[String], known: &BTreeSet<String>, root: &BTreeMap<String, Vec<String>>) -> Option<String> {
    let path = match path.first().and_then(|n| root.get(n)) {
        Some(via) if path.len() == 1 || !known.contains(&path[0]) => via.clone(),
        _ => path.to_vec(),
    };
    (1..=path.len())
        .rev()
        .map(|k| path[..k].join("::"))
        .find(|c| known.contains(c))
}

/// The circles among the modules of each layer, a module's submodules counted as part of it
/// (`kernel::native::vjp` is `kernel::native`); the layer's own file is a module of its own.
fn circles(edges: &[Edge]) -> Vec<String> {
    let unit = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for e in edges {
        let (a, b) = (unit(&e.from), unit(&e.to));
        // a circle across layers needs an import from above, reported as that
        if a != b && layer(&a) == layer(&b) {
            graph.entry(a).or_default().entry(b).or_insert_with(|| e.at.clone());
        }
    }
    let mut out = Vec::new();
    let mut reported = BTreeSet::new();
    for start in graph.keys() {
        if let Some(cycle) = cycle_through(&graph, start) {
            let mut key = cycle.clone();
            key.sort();
            if reported.insert(key) {
                let steps: Vec<String> = cycle
                    .iter()
                    .zip(cycle.iter().cycle().skip(1))
                    .map(|(a, b)| format!("{a} -> {b} ({})", graph[a][b]))
                    .collect();
                out.push(format!("import circle: {}", steps.join(", ")));
            }
        }
    }
    out
}

/// The shortest circle of `graph` through `start`, if any (breadth-first).
fn cycle_through(graph: &BTreeMap<String, BTreeMap<String, String>>, start: &str) -> Option<Vec<String>> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(&node).into_iter().flat_map(|n| n.keys()) {
            if next == start {
                let mut cycle = vec![node.clone()];
                while let Some(p) = parent.get(cycle.last().unwrap()) {
                    cycle.push(p.clone());
                }
                cycle.reverse();
                return Some(cycle);
            }
            if !parent.contains_key(next) {
                parent.insert(next.clone(), node.clone());
                queue.push_back(next.clone());
            }
        }
    }
    None
}
