//! `scripts/deps --check --test`: what it would install, judged on a scratch machine — a
//! filesystem tree under `HERALD_DEPS_ROOT` and a `PATH` of fake tools — never the host's.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

const NODE_ITEM: &str = "node >= 20.19";

/// A scratch machine: every tool present (Node 22, PHP with curl and mbstring), CA
/// certificates, HTTParty and Guzzle, PostgreSQL's programs, nothing else under `/usr/lib`.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let machine = Self {
            dir: tempfile::tempdir().expect("scratch directory"),
        };
        // A copy of the script, so that the repository's own compat/.venv is not seen.
        let scripts = machine.path("repo/scripts");
        fs::create_dir_all(&scripts).expect("scratch repo/scripts");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/deps");
        fs::copy(script, scripts.join("deps")).expect("copy scripts/deps");
        fs::create_dir_all(machine.path("bin")).expect("scratch bin");
        symlink(host_bash(), machine.path("bin/bash")).expect("link bash into the scratch PATH");
        for tool in [
            "cc",
            "c++",
            "pkg-config",
            "clang",
            "python3",
            "curl",
            "cargo",
            "npm",
            "chromium",
            "chromedriver",
            "go",
            "ruby",
        ] {
            machine.tool(tool, "exit 0");
        }
        machine.tool("node", "echo v22.11.0");
        machine.tool("php", "printf '[PHP Modules]\\ncurl\\nmbstring\\njson\\n'");
        machine.file("/etc/ssl/certs/ca-certificates.crt");
        machine.file("/usr/share/rubygems-integration/all/gems/httparty-0.21.0/lib/httparty.rb");
        machine.file("/usr/share/php/GuzzleHttp/autoload.php");
        machine.file("/usr/share/php/GuzzleHttp/Psr7/autoload.php");
        machine.file("/usr/lib/postgresql/15/bin/initdb");
        machine
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Puts a fake `name` on the scratch PATH, running the shell `body`.
    fn tool(&self, name: &str, body: &str) {
        let path = self.path(&format!("bin/{name}"));
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write a fake tool");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod a fake tool");
    }

    fn remove_tool(&self, name: &str) {
        fs::remove_file(self.path(&format!("bin/{name}"))).expect("remove a fake tool");
    }

    /// Creates an empty file at the absolute `path` of the scratch machine.
    fn file(&self, path: &str) {
        let path = self.path(&format!("root{path}"));
        fs::create_dir_all(path.parent().expect("a parent")).expect("scratch directories");
        fs::write(path, "").expect("scratch file");
    }

    /// What `scripts/deps --check --test` would install, one item a line.
    fn check(&self, env: &[(&str, &str)]) -> Vec<String> {
        let output = Command::new(self.path("bin/bash"))
            .arg(self.path("repo/scripts/deps"))
            .args(["--check", "--test"])
            .env_clear()
            .env("PATH", self.path("bin"))
            .env("HOME", self.dir.path())
            .env("HERALD_DEPS_ROOT", self.path("root"))
            .envs(env.iter().copied())
            .output()
            .expect("run scripts/deps");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "scripts/deps --check failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout.lines().map(str::to_owned).collect()
    }

    /// Debian 12's libclang1-14 (the runtime library, which comes with clang), without
    /// libclang-14-dev's `libclang.so` and `libclang-14.so`.
    fn runtime_libclang(&self) {
        self.file("/usr/lib/x86_64-linux-gnu/libclang-14.so.1");
        self.file("/usr/lib/llvm-14/lib/libclang.so.1");
        self.file("/usr/lib/llvm-14/lib/libclang-cpp.so.14");
    }
}

fn host_bash() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|dir| dir.join("bash"))
        .find(|bash| bash.is_file())
        .expect("bash on PATH")
}

fn has_node(items: &[String]) -> bool {
    items.iter().any(|item| item.starts_with(NODE_ITEM))
}

#[test]
fn the_runtime_libclang_alone_needs_libclang_dev() {
    let machine = Machine::new();
    machine.runtime_libclang();
    assert_eq!(machine.check(&[]), ["libclang-dev"]);
}

#[test]
fn an_unversioned_or_version_named_libclang_is_enough() {
    for name in ["libclang.so", "libclang-14.so"] {
        let machine = Machine::new();
        machine.runtime_libclang();
        machine.file(&format!("/usr/lib/llvm-14/lib/{name}"));
        assert_eq!(machine.check(&[]), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn libclang_path_is_the_only_place_searched_when_set() {
    let machine = Machine::new();
    machine.file("/opt/llvm/lib/libclang.so");
    assert!(machine.check(&[]).contains(&"libclang-dev".to_owned()));
    assert_eq!(
        machine.check(&[("LIBCLANG_PATH", "/opt/llvm/lib")]),
        Vec::<String>::new()
    );
    machine.file("/usr/lib/llvm-14/lib/libclang.so");
    assert_eq!(machine.check(&[("LIBCLANG_PATH", "/opt/elsewhere")]), ["libclang-dev"]);
}

#[test]
fn node_older_than_20_19_or_missing_is_replaced() {
    for (version, wanted) in [
        ("v18.19.0", true),
        ("v20.18.3", true),
        ("v20.19.0", false),
        ("v22.11.0", false),
    ] {
        let machine = Machine::new();
        machine.file("/usr/lib/llvm-14/lib/libclang.so");
        machine.tool("node", &format!("echo {version}"));
        assert_eq!(has_node(&machine.check(&[])), wanted, "{version}");
    }
    let machine = Machine::new();
    machine.file("/usr/lib/llvm-14/lib/libclang.so");
    machine.remove_tool("node");
    assert!(has_node(&machine.check(&[])), "no node");
}

#[test]
fn missing_build_tools_name_their_apt_packages() {
    for (tool, package) in [("pkg-config", "pkg-config"), ("c++", "build-essential")] {
        let machine = Machine::new();
        machine.file("/usr/lib/llvm-14/lib/libclang.so");
        machine.remove_tool(tool);
        assert_eq!(machine.check(&[]), [package], "{tool}");
    }
}

#[test]
fn the_go_ruby_and_php_suites_toolchains_name_their_apt_packages() {
    for (tool, packages) in [
        ("go", &["golang-go"][..]),
        ("ruby", &["ruby"][..]),
        ("php", &["php-cli", "php-curl", "php-mbstring"][..]),
    ] {
        let machine = Machine::new();
        machine.file("/usr/lib/llvm-14/lib/libclang.so");
        machine.remove_tool(tool);
        assert_eq!(machine.check(&[]), packages, "{tool}");
    }
    let machine = Machine::new();
    machine.file("/usr/lib/llvm-14/lib/libclang.so");
    machine.tool("php", "printf '[PHP Modules]\\ncurl\\n'");
    fs::remove_file(machine.path("root/usr/share/php/GuzzleHttp/autoload.php")).expect("remove Guzzle");
    fs::remove_dir_all(machine.path("root/usr/share/rubygems-integration")).expect("remove HTTParty");
    assert_eq!(
        machine.check(&[]),
        ["ruby-httparty", "php-mbstring", "php-guzzlehttp-guzzle"]
    );
}

#[test]
fn postgresql_is_installed_when_its_programs_are_missing() {
    let machine = Machine::new();
    machine.runtime_libclang();
    machine.file("/usr/lib/llvm-14/lib/libclang.so");
    assert_eq!(machine.check(&[]), Vec::<String>::new());
    fs::remove_file(machine.path("root/usr/lib/postgresql/15/bin/initdb")).expect("remove initdb");
    assert_eq!(
        machine.check(&[]),
        ["postgresql"],
        "psql alone (postgresql-client) does not run a server"
    );
}
