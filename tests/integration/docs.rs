//! The documentation as a user reads it: every shell command of README.md and `docs/*.md`
//! that runs `nanobragg` (or `nanobragg-manifest`, `nanobragg-compare`, `cargo run --release
//! --`, a SLURM launcher) is executed, on a tiny detector, and must succeed; `nanobragg -h`
//! lists every flag and every `-derivative` name; every guide is compiled as a doc test
//! (`src/lib.rs`) and listed in the README; and every file a guide names exists.
//!
//! A fenced block tagged `sh`, `bash` or `console` is run as one bash script; a guide's blocks
//! run in order in one fresh directory holding the input files the guides use (`INPUTS`).
//! `nanobragg` on the scripts' PATH is a wrapper (`SHRINK`) that renders 16² pixels
//! (`-detpixels` values replaced, or added), caps `-shots_random` at 4 shots, drops
//! `-engine wgpu` and `-fusion` where no wgpu adapter exists, and records every failed run; `cargo run --release --` is replaced by
//! `nanobragg`, other cargo commands (build, test, bench, examples) are left out. In a
//! `console` block only the lines after a `$ ` prompt are commands.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`, by path relative to the root, with their text.
fn guides() -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".into());
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root().join(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, text)
        })
        .collect()
}

/// A fenced shell block: where it starts (1-based line of the fence) and its commands, one
/// logical line each (continuations joined, `console` prompts removed, output dropped).
#[derive(Debug)]
struct ShellBlock {
    line: usize,
    commands: Vec<String>,
}

/// The shell blocks of a markdown text.
fn shell_blocks(text: &str) -> Vec<ShellBlock> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let lang = info.split([',', ' ']).next().unwrap_or("");
        let body: Vec<&str> = lines
            .by_ref()
            .map(|(_, l)| l)
            .take_while(|l| !l.trim_start().starts_with("```"))
            .collect();
        let commands = match lang {
            "sh" | "bash" | "shell" => logical_lines(&body, false),
            "console" => logical_lines(&body, true),
            _ => continue,
        };
        blocks.push(ShellBlock { line: i + 1, commands });
    }
    blocks
}

/// Joins lines ending in `\` with the next; with `prompted`, only lines starting with `$ `
/// (and their continuations) are kept, without the prompt.
fn logical_lines(body: &[&str], prompted: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in body {
        let text = match current.take() {
            Some(start) => format!("{start} {}", line.trim()),
            None if prompted => match line.strip_prefix("$ ") {
                Some(command) => command.to_string(),
                None => continue,
            },
            None => line.to_string(),
        };
        match text.strip_suffix('\\') {
            Some(open) => current = Some(open.trim_end().to_string()),
            None => out.push(text),
        }
    }
    out.extend(current);
    out
}

/// The programs whose runs the test checks.
const PROGRAMS: [&str; 6] = [
    "nanobragg",
    "nanobragg-manifest",
    "nanobragg-compare",
    "noisify",
    "nonbragg",
    "sbatch",
];

/// A command line as the test runs it: `cargo run --release --` becomes `nanobragg`, the
/// binaries' `target/release/` prefix goes (they are on the script's PATH); `None` for other
/// cargo commands and for comments.
fn runnable(command: &str) -> Option<String> {
    let trimmed = command.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    let line = trimmed
        .replace("cargo run --release -- ", "nanobragg ")
        .replace("./target/release/", "")
        .replace("target/release/", "");
    let words: Vec<&str> = line.split_whitespace().collect();
    let program = words.iter().find(|w| !w.contains('=')).copied().unwrap_or("");
    (program != "cargo").then_some(line)
}

/// Whether a block runs one of [`PROGRAMS`].
fn runs_nanobragg(block: &ShellBlock) -> bool {
    block.commands.iter().filter_map(|c| runnable(c)).any(|c| {
        c.split(|ch: char| ch.is_whitespace() || "();&|".contains(ch))
            .any(|w| PROGRAMS.contains(&w))
    })
}

/// Files the guides' commands read, as a user would have them: (name in the guide, source).
const INPUTS: [(&str, Input); 4] = [
    ("refined.expt", Input::Fixture("fixtures/panels/four_tilted.expt")),
    ("jungfrau4m.geom", Input::Fixture("fixtures/panels/cspad64.geom")),
    ("shots.jsonl", Input::Text(SHOT_LIST)),
    ("water.stol", Input::Fixture("fixtures/stol/water.stol")),
];

/// Where an input file comes from.
enum Input {
    Fixture(&'static str),
    Text(&'static str),
}

const SHOT_LIST: &str = "{\"misset\": [10, 20, 30], \"lambda\": 1.1, \"distance\": 120, \"seed\": 5}\n\
{\"misset\": \"random\", \"fluence\": 2e24, \"N\": 8}\n";

/// Pixels along each axis of every run, and the most shots of a `-shots_random` run.
const PIXELS: usize = 16;
const SHOTS: usize = 4;

/// The wrapper library: `shrink ARGS` leaves the arguments to run in `OUT_ARGS`.
const SHRINK: &str = r#"
shrink() {
    OUT_ARGS=()
    local sized=""
    while [ $# -gt 0 ]; do
        case "$1" in
        -detpixels|-detpixels_f|-detpixels_s|-detpixels_x|-detpixels_y)
            if [ $# -ge 2 ]; then OUT_ARGS+=("$1" "$NB_DOCS_PIXELS"); shift 2; sized=1; continue; fi ;;
        -shots_random)
            if [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -gt "$NB_DOCS_SHOTS" ]; then
                OUT_ARGS+=("$1" "$NB_DOCS_SHOTS"); shift 2; continue
            fi ;;
        -engine|-fusion)
            if [ -n "${NB_DOCS_NO_WGPU:-}" ] && [ $# -ge 2 ] && [ "$2" != cpu ]; then
                echo "docs test: no wgpu adapter here, '$1 $2' left out" >&2; shift 2; continue
            fi ;;
        --)
            OUT_ARGS+=("$@"); return ;;
        esac
        OUT_ARGS+=("$1"); shift
    done
    [ -n "$sized" ] || OUT_ARGS+=(-detpixels "$NB_DOCS_PIXELS")
}
"#;

/// `nanobragg`: the real binary on shrunk arguments; a failed run is recorded.
const NANOBRAGG_SHIM: &str = r#"#!/usr/bin/env bash
. "$(dirname "$0")/shrink.sh"
shrink "$@"
err=$(mktemp)
"$NB_DOCS_NANOBRAGG" "${OUT_ARGS[@]}" 2>"$err"
status=$?
cat "$err" >&2
if [ $status -ne 0 ]; then
    { echo "nanobragg $* (exit $status):"; cat "$err"; echo; } >> "$NB_DOCS_FAILURES"
fi
rm -f "$err"
exit $status
"#;

/// `nanobragg-compare`: the real tool with this wrapper standing in for both programs (it
/// takes C's flags), the flags after `--` shrunk as the wrapper shrinks them.
const COMPARE_SHIM: &str = r#"#!/usr/bin/env bash
. "$(dirname "$0")/shrink.sh"
options=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case "$1" in
    --c-bin|--nanobragg) shift 2 ;;
    *) options+=("$1"); shift ;;
    esac
done
shift
shrink "$@"
me="$(dirname "$0")/nanobragg"
exec "$NB_DOCS_COMPARE" --c-bin "$me" --nanobragg "$me" "${options[@]}" -- "${OUT_ARGS[@]}"
"#;

/// `sbatch --array=A-B SCRIPT ARGS`: every task of the array, one after the other, here.
const SBATCH_SHIM: &str = r#"#!/usr/bin/env bash
set -e
range="${1#--array=}"; shift
script="$1"; shift
[ -e "$script" ] || script="$NB_DOCS_ROOT/$script"
first="${range%-*}"; last="${range#*-}"
for task in $(seq "$first" "$last"); do
    SLURM_ARRAY_TASK_ID=$task SLURM_ARRAY_TASK_MIN=$first SLURM_ARRAY_TASK_COUNT=$((last - first + 1)) \
        bash "$script" "$@"
done
"#;

/// A directory of wrappers to put first on PATH.
fn shims() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("shim written");
        make_executable(&path);
    };
    write("shrink.sh", SHRINK);
    write("nanobragg", NANOBRAGG_SHIM);
    write("nanobragg-compare", COMPARE_SHIM);
    write("sbatch", SBATCH_SHIM);
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_nanobragg-manifest"),
        dir.path().join("nanobragg-manifest"),
    )
    .expect("link to nanobragg-manifest");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_noisify"), dir.path().join("noisify")).expect("link to noisify");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nonbragg"), dir.path().join("nonbragg")).expect("link to nonbragg");
    dir
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A fresh working directory holding the guides' input files.
fn working_directory() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (name, input) in &INPUTS {
        let target = dir.path().join(name);
        match input {
            Input::Fixture(path) => std::fs::copy(root().join(path), &target).map(drop),
            Input::Text(text) => std::fs::write(&target, text),
        }
        .expect("input file written");
    }
    dir
}

/// The outcome of one block run in `dir`: `Err` with what to report when it failed.
fn run_block(dir: &Path, shims: &Path, wgpu: bool, commands: &[String]) -> Result<(), String> {
    let script: Vec<String> = commands.iter().filter_map(|c| runnable(c)).collect();
    let failures = dir.join(".failures");
    let _ = std::fs::remove_file(&failures);
    let path = format!("{}:{}", shims.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("set -eo pipefail\n{}", script.join("\n")))
        .current_dir(dir)
        .env("PATH", path)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env("NB_DOCS_NANOBRAGG", env!("CARGO_BIN_EXE_nanobragg"))
        .env("NB_DOCS_COMPARE", env!("CARGO_BIN_EXE_nanobragg-compare"))
        .env("NB_DOCS_ROOT", root())
        .env("NB_DOCS_FAILURES", &failures)
        .env("NB_DOCS_PIXELS", PIXELS.to_string())
        .env("NB_DOCS_SHOTS", SHOTS.to_string());
    if !wgpu {
        cmd.env("NB_DOCS_NO_WGPU", "1");
    }
    let out = common::output_within(cmd, std::time::Duration::from_secs(120))
        .ok_or_else(|| format!("did not finish in 120 s:\n{}", script.join("\n")))?;
    let recorded = std::fs::read_to_string(&failures).unwrap_or_default();
    if out.status.success() && recorded.is_empty() {
        return Ok(());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(format!(
        "script:\n{}\n{recorded}{}\nstdout (end):\n{}\nstderr (end):\n{}",
        script.join("\n"),
        out.status,
        last_lines(&stdout, 10),
        last_lines(&stderr, 15)
    ))
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs the shell blocks of `guides` that run nanobragg, each guide's in order in one
/// directory (as a reader following it would); the number run and the failures, each naming
/// its guide and line.
fn failures_of(guides: &[(String, String)]) -> (usize, Vec<String>) {
    let shims = shims();
    let wgpu = wgpu_available();
    let mut ran = 0;
    let mut failed = Vec::new();
    for (name, text) in guides {
        let dir = working_directory();
        for block in shell_blocks(text).iter().filter(|b| runs_nanobragg(b)) {
            ran += 1;
            if let Err(why) = run_block(dir.path(), shims.path(), wgpu, &block.commands) {
                failed.push(format!("{name}:{}: {why}", block.line));
            }
        }
    }
    (ran, failed)
}

/// Whether the wgpu engine can start here (the docs' wgpu commands then run as written).
fn wgpu_available() -> bool {
    let available = nanobragg::engine::Engine::Wgpu { fusion: true }.probe().is_ok();
    if !available {
        eprintln!("no wgpu adapter: the guides' wgpu commands run with the cpu engine");
    }
    available
}

#[test]
fn every_command_of_the_guides_runs() {
    let (ran, failed) = failures_of(&guides());
    assert!(
        ran >= 10,
        "only {ran} shell blocks run nanobragg: is the extraction broken?"
    );
    assert!(
        failed.is_empty(),
        "{} of {ran} blocks failed:\n\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}

/// The check itself must fail on a wrong flag, a missing value and a failing background run.
#[test]
fn a_wrong_command_in_a_guide_fails_the_check() {
    let flags = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5";
    for bad in [
        format!("```sh\nnanobragg {flags} -no_such_flag 3\n```\n"),
        format!("```console\n$ cargo run --release -- {flags} -distance\nout\n```\n"),
        format!("```sh\nfor i in 0 1; do nanobragg {flags} -shard $i/2 & done; wait\n```\n"),
        format!("```sh\nnanobragg-compare --c-bin /path/to/nanoBragg -- {flags} -wrong\n```\n"),
    ] {
        let (ran, failed) = failures_of(&[("bad.md".into(), bad.clone())]);
        assert_eq!((ran, failed.len()), (1, 1), "{bad}: {failed:?}");
    }
    let good = format!("```sh\nmkdir -p out\nnanobragg {flags} -shots_random 1000 -seed 1 -prefix out/s_\n```\n");
    let (ran, failed) = failures_of(&[("good.md".into(), good)]);
    assert_eq!((ran, failed.len()), (1, 0), "{failed:?}");
}

#[test]
fn shell_blocks_join_continuations_and_drop_console_output() {
    let text = "```console\n$ nanobragg -N 5 \\\n    -lambda 1\nwriting x\n```\n\n```text\nnanobragg -x\n```\n";
    let blocks = shell_blocks(text);
    assert_eq!(blocks.len(), 1);
    assert_eq!(
        (blocks[0].line, blocks[0].commands.clone()),
        (1, vec!["nanobragg -N 5 -lambda 1".to_string()])
    );
    assert_eq!(runnable("cargo build --release"), None);
    assert_eq!(
        runnable("cargo run --release -- -N 5").as_deref(),
        Some("nanobragg -N 5")
    );
    assert_eq!(
        runnable("NB_C_BIN=x cargo run --release --example bench -- --sizes 512"),
        None
    );
}

/// The words of `text` (split at white space and the punctuation around flags and names).
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || ",()|;:[]{}".contains(c))
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn help_lists_every_shot_flag_and_derivative_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .arg("-h")
        .output()
        .expect("binary runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(help, nanobragg::experiment::args::usage(), "-h prints the usage text");
    let listed = words(&help);
    let names = nanobragg::config::components::COMPONENTS.iter().map(|c| c.name);
    let motions = nanobragg::experiment::panels::motion::MOTIONS.iter().map(|m| m.0);
    let missing: Vec<&str> = names
        .chain(motions)
        .chain(nanobragg::app::shots::args::SHOT_FLAGS)
        .filter(|w| !listed.contains(w))
        .collect();
    assert!(missing.is_empty(), "missing from nanobragg -h: {missing:?}");
}

#[test]
fn every_guide_is_compiled_and_listed_in_the_readme() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for (name, _) in guides() {
        let include = format!("include_str!(\"../{name}\")");
        assert!(
            lib.contains(&include),
            "src/lib.rs does not compile {name}'s examples ({include})"
        );
        if name != "README.md" {
            assert!(readme.contains(&format!("({name})")), "README.md does not link {name}");
        }
    }
}

/// Paths of the repository a text names in backticks or links (`src/...`, `docs/...`, ...).
fn named_paths(text: &str) -> Vec<String> {
    const TOP: [&str; 8] = [
        "src/",
        "tests/",
        "examples/",
        "docs/",
        "fixtures/",
        "benches/",
        "vendor/",
        ".ci/",
    ];
    text.split(|c: char| c.is_whitespace() || "`()[]<>\"',;".contains(c))
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| TOP.iter().any(|t| w.starts_with(t)) && !w.contains(['*', '{', '$']))
        .map(|w| w.split("::").next().unwrap_or(w).to_string())
        .collect()
}

#[test]
fn every_file_a_guide_names_exists() {
    let mut missing = Vec::new();
    for (name, text) in guides() {
        let base = if name == "README.md" {
            root()
        } else {
            root().join("docs")
        };
        for path in named_paths(&text) {
            if !root().join(&path).exists() && !base.join(&path).exists() {
                missing.push(format!("{name}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not in the repository:\n{}",
        missing.join("\n")
    );
}
