//! The file-level import graph of a crate's `src/`, read from the source text: `use`
//! trees (with `pub use` re-exports followed to the file that defines the item), paths
//! written in code that start at `crate::`, `super::`, `self::`, a child module or a
//! module a `use` bound, and `herald::` in the binary. Comments, string literals and test
//! modules (`mod tests`, `tests.rs`, `testing.rs`) are left out: what ships is what the
//! layers constrain.
//!
//! It is a reader, not a compiler: a path it cannot place (an extern crate, an enum
//! variant, a name a glob brought in) gives no edge, so the graph errs towards fewer
//! edges, never invented ones.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// One source file of the crate.
#[derive(Debug)]
pub struct SourceFile {
    /// Its path under `src/`, with `/` between folders (`emails/record.rs`).
    pub path: String,
    /// Its module path (`["emails", "record"]`; the crate root's is empty).
    pub module: Vec<String>,
    /// Its code, comments and string literals blanked and test modules removed, with its
    /// lines where they were.
    pub code: String,
}

/// The graph: files, and which file imports which.
#[derive(Debug)]
pub struct Graph {
    /// Every non-test source file, sorted by path.
    pub files: Vec<SourceFile>,
    /// `(importer, imported)` by file index, with the first line the import is on.
    pub edges: BTreeMap<(usize, usize), usize>,
}

impl Graph {
    /// The graph of the crate whose sources are in `src`.
    pub fn read(src: &Path) -> Graph {
        let mut paths = Vec::new();
        walk(src, src, &mut paths);
        paths.sort();
        let files: Vec<SourceFile> = paths
            .into_iter()
            .filter(|path| !is_test_file(path))
            .map(|path| {
                let text = std::fs::read_to_string(src.join(&path)).expect("read a source file");
                SourceFile {
                    module: module_of(&path),
                    code: without_tests(&blank(&text)),
                    path,
                }
            })
            .collect();
        let modules: HashMap<Vec<String>, usize> = files
            .iter()
            .enumerate()
            .map(|(index, file)| (file.module.clone(), index))
            .collect();
        let parsed: Vec<Parsed> = files.iter().map(|file| parse(file, &modules)).collect();
        let resolver = Resolver {
            modules: &modules,
            reexports: parsed.iter().map(|p| &p.reexports).collect(),
        };
        let mut edges = BTreeMap::new();
        for (from, file) in parsed.iter().enumerate() {
            for (path, line) in &file.references {
                let Some(to) = resolver.resolve(path, 0) else { continue };
                if to != from && !files[to].module.is_empty() {
                    edges.entry((from, to)).or_insert(*line);
                }
            }
        }
        Graph { files, edges }
    }

    /// The index of the file at `path` (under `src/`).
    pub fn index_of(&self, path: &str) -> Option<usize> {
        self.files.iter().position(|file| file.path == path)
    }

    /// The groups of more than one file that import each other in a circle, each sorted,
    /// leaving out a module file's imports of its own children (a `mod.rs` re-exporting
    /// what its children define is how Rust modules are built).
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); self.files.len()];
        for &(from, to) in self.edges.keys() {
            let parent = &self.files[from].module;
            let child = &self.files[to].module;
            let own_child = child.len() == parent.len() + 1 && child.starts_with(parent);
            if !own_child {
                next[from].push(to);
            }
        }
        strongly_connected(&next)
            .into_iter()
            .filter(|group| group.len() > 1)
            .collect()
    }
}

/// Whether `path` holds only tests or test helpers.
fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == "tests.rs" || name == "testing.rs"
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read the source tree") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(root, &path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under the root");
            let parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            found.push(parts.join("/"));
        }
    }
}

/// The module path of the file at `path`: `lib.rs` is the root, `a/mod.rs` and `a.rs`
/// are `a`, and the binary's `main.rs` is a module of its own.
fn module_of(path: &str) -> Vec<String> {
    if path == "lib.rs" {
        return Vec::new();
    }
    let mut parts: Vec<String> = path.split('/').map(str::to_owned).collect();
    let last = parts.pop().expect("a file name");
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_owned());
    }
    parts
}

/// `text` with comments and the contents of string and character literals replaced by
/// spaces, newlines kept.
fn blank(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let after_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && !after_ident && matches!(next, Some('"') | Some('#')) && raw_start(&chars, i).is_some() {
            let (hashes, body) = raw_start(&chars, i).expect("checked");
            out.push('"');
            i = body;
            while i < chars.len() {
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes {
                    i += 1 + hashes;
                    break;
                }
                out.push(keep(chars[i]));
                i += 1;
            }
            out.push('"');
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(keep(chars[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && char_literal_end(&chars, i).is_some() {
            i = char_literal_end(&chars, i).expect("checked");
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// For a raw string starting at `at` (`r"`, `r#"`, ...): how many `#` and where its body
/// starts.
fn raw_start(chars: &[char], at: usize) -> Option<(usize, usize)> {
    let mut i = at + 1;
    while chars.get(i) == Some(&'#') {
        i += 1;
    }
    (chars.get(i) == Some(&'"')).then_some((i - at - 1, i + 1))
}

/// Where the character literal starting at `at` ends, if one does (a lifetime does not).
fn char_literal_end(chars: &[char], at: usize) -> Option<usize> {
    match chars.get(at + 1)? {
        '\\' => {
            let close = (at + 2..chars.len().min(at + 12)).find(|&i| chars[i] == '\'')?;
            Some(close + 1)
        }
        _ => (chars.get(at + 2) == Some(&'\'')).then_some(at + 3),
    }
}

/// `code` with the bodies of test modules (`mod tests {`, `mod ..._tests {`, after a
/// `#[cfg(test)]`) blanked.
fn without_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let Some(open) = after.find(['{', ';']) else {
            out.push_str(after);
            return out;
        };
        let header = &after[..open];
        if !header.contains("mod ") || after.as_bytes()[open] == b';' {
            out.push_str(&after[..open + 1]);
            rest = &after[open + 1..];
            continue;
        }
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.extend(after[..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A token of blanked code.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokens(code: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// What one file says: the paths it names (absolute module paths, with the line), and
/// what it re-exports (a name to the absolute path it stands for).
struct Parsed {
    references: Vec<(Vec<String>, usize)>,
    reexports: HashMap<String, Vec<String>>,
}

fn ident(token: Option<&(Token, usize)>) -> Option<&str> {
    match token {
        Some((Token::Ident(name), _)) => Some(name),
        _ => None,
    }
}

fn parse(file: &SourceFile, modules: &HashMap<Vec<String>, usize>) -> Parsed {
    let tokens = tokens(&file.code);
    let mut parsed = Parsed {
        references: Vec::new(),
        reexports: HashMap::new(),
    };
    // Names a `use` bound to a module, for paths written through them.
    let mut bound: HashMap<String, Vec<String>> = HashMap::new();
    // Inline modules open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let context: Vec<String> = file
            .module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect();
        match &tokens[i].0 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, open)| *open == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(name), Some((Token::Punct('{'), _))) = (ident(tokens.get(i + 1)), tokens.get(i + 2)) {
                    inline.push((name.to_owned(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Token::Ident(word) if word == "use" => {
                let public = i > 0 && is_visibility_end(&tokens, i);
                let line = tokens[i].1;
                let mut leaves = Vec::new();
                let end = use_tree(&tokens, i + 1, Vec::new(), &mut leaves);
                for (path, alias) in leaves {
                    let Some(absolute) = absolute(&path, &context, modules, &bound) else {
                        continue;
                    };
                    let name = alias
                        .or_else(|| path.last().cloned())
                        .filter(|n| n != "*" && n != "self");
                    if let Some(name) = name {
                        if modules.contains_key(&absolute) {
                            bound.insert(name.clone(), absolute.clone());
                        }
                        if public && inline.is_empty() {
                            parsed.reexports.insert(name, absolute.clone());
                        }
                    }
                    parsed.references.push((absolute, line));
                }
                i = end;
                continue;
            }
            Token::Ident(first) => {
                let starts_path = i == 0 || tokens[i - 1].0 != Token::PathSep;
                if starts_path && tokens.get(i + 1).is_some_and(|t| t.0 == Token::PathSep) {
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while tokens.get(j).is_some_and(|t| t.0 == Token::PathSep) {
                        let Some(segment) = ident(tokens.get(j + 1)) else { break };
                        path.push(segment.to_owned());
                        j += 2;
                    }
                    if let Some(absolute) = absolute(&path, &context, modules, &bound) {
                        parsed.references.push((absolute, tokens[i].1));
                    }
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    parsed
}

/// Whether the `use` at `at` follows a visibility (`pub`, `pub(crate)`, `pub(super)`).
fn is_visibility_end(tokens: &[(Token, usize)], at: usize) -> bool {
    if ident(tokens.get(at - 1)) == Some("pub") {
        return true;
    }
    at >= 4 && tokens[at - 1].0 == Token::Punct(')') && ident(tokens.get(at - 4)) == Some("pub")
}

/// Reads the `use` tree starting at `at` under `prefix`, pushing each leaf (its path and
/// its `as` name); returns the index after the tree's end.
fn use_tree(
    tokens: &[(Token, usize)],
    mut at: usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    if tokens.get(at).is_some_and(|t| t.0 == Token::PathSep) {
        // `use ::name`: an extern crate.
        prefix.push("::".to_owned());
        at += 1;
    }
    loop {
        match tokens.get(at).map(|t| &t.0) {
            Some(Token::Ident(segment)) => {
                prefix.push(segment.clone());
                at += 1;
                if tokens.get(at).is_some_and(|t| t.0 == Token::PathSep) {
                    at += 1;
                    continue;
                }
                let mut alias = None;
                if ident(tokens.get(at)) == Some("as") {
                    alias = ident(tokens.get(at + 1)).map(str::to_owned);
                    at += 2;
                }
                leaves.push((prefix, alias));
                return skip_separator(tokens, at);
            }
            Some(Token::Punct('*')) => {
                prefix.push("*".to_owned());
                leaves.push((prefix, None));
                return skip_separator(tokens, at + 1);
            }
            Some(Token::Punct('{')) => {
                at += 1;
                while tokens.get(at).is_some_and(|t| t.0 != Token::Punct('}')) {
                    at = use_tree(tokens, at, prefix.clone(), leaves);
                }
                return skip_separator(tokens, at + 1);
            }
            _ => return skip_separator(tokens, at),
        }
    }
}

/// Past a `,` or `;` ending a use tree, if there is one.
fn skip_separator(tokens: &[(Token, usize)], at: usize) -> usize {
    match tokens.get(at).map(|t| &t.0) {
        Some(Token::Punct(',')) | Some(Token::Punct(';')) => at + 1,
        _ => at,
    }
}

/// `path`, written in the module `context`, as an absolute module path, if it is one of
/// this crate's.
fn absolute(
    path: &[String],
    context: &[String],
    modules: &HashMap<Vec<String>, usize>,
    bound: &HashMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" | "herald" => Vec::new(),
        "self" => context.to_vec(),
        "super" => {
            let mut base = context.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            return Some(base.into_iter().chain(rest.iter().cloned()).collect());
        }
        _ => {
            let mut child = context.to_vec();
            child.push(first.clone());
            if modules.contains_key(&child) {
                return Some(child.into_iter().chain(path[1..].iter().cloned()).collect());
            }
            let module = bound.get(first)?.clone();
            return Some(module.into_iter().chain(path[1..].iter().cloned()).collect());
        }
    };
    base.extend(path[1..].iter().cloned());
    Some(base)
}

/// Finds the file an absolute path lands in.
struct Resolver<'a> {
    modules: &'a HashMap<Vec<String>, usize>,
    reexports: Vec<&'a HashMap<String, Vec<String>>>,
}

impl Resolver<'_> {
    /// The file that defines what `path` names: the deepest module file on the path, or,
    /// where that module re-exports the next name, the file the re-export leads to.
    fn resolve(&self, path: &[String], hops: usize) -> Option<usize> {
        let mut known = 0;
        while known < path.len() && self.modules.contains_key(&path[..=known]) {
            known += 1;
        }
        let file = *self.modules.get(&path[..known])?;
        if let Some(name) = path.get(known).filter(|_| hops < 8)
            && let Some(target) = self.reexports[file].get(name)
        {
            let next: Vec<String> = target.iter().chain(&path[known + 1..]).cloned().collect();
            if let Some(found) = self.resolve(&next, hops + 1) {
                return Some(found);
            }
        }
        Some(file)
    }
}

/// Tarjan's strongly connected components of the graph `next`.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        next: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        groups: Vec<Vec<usize>>,
    }
    fn visit(state: &mut State<'_>, node: usize) {
        state.index[node] = Some(state.counter);
        state.low[node] = state.counter;
        state.counter += 1;
        state.stack.push(node);
        state.on_stack[node] = true;
        for &to in &state.next[node] {
            match state.index[to] {
                None => {
                    visit(state, to);
                    state.low[node] = state.low[node].min(state.low[to]);
                }
                Some(index) if state.on_stack[to] => state.low[node] = state.low[node].min(index),
                Some(_) => {}
            }
        }
        if Some(state.low[node]) == state.index[node] {
            let mut group = BTreeSet::new();
            loop {
                let member = state.stack.pop().expect("on the stack");
                state.on_stack[member] = false;
                group.insert(member);
                if member == node {
                    break;
                }
            }
            state.groups.push(group.into_iter().collect());
        }
    }
    let count = next.len();
    let mut state = State {
        next,
        index: vec![None; count],
        low: vec![0; count],
        on_stack: vec![false; count],
        stack: Vec::new(),
        counter: 0,
        groups: Vec::new(),
    };
    for node in 0..count {
        if state.index[node].is_none() {
            visit(&mut state, node);
        }
    }
    state.groups
}
