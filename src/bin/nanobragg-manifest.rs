//! `nanobragg-manifest`: tools for the manifests of shot runs (`nanobragg -shots ...`).
//!
//! `merge DIR...` reads the manifests of all shards, reports missing shots, duplicate lines,
//! files that are missing or whose size or SHA-256 differ, unreadable lines and shards run with
//! other flags, and optionally writes one merged manifest. Exit status: 0 when the union is
//! complete and intact, 1 when any problem was found, 9 when a manifest cannot be read, 2 for
//! bad arguments.

use clap::{Parser, Subcommand};
use nanobragg::app::shots::merge::{merge, ranges, write_merged, MergeReport};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "nanobragg-manifest",
    version,
    about = "Merge and verify the manifests of nanobragg shot runs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Merge and verify shard manifests: missing shots, duplicates, hash mismatches.
    Merge {
        /// Directories (their manifest*.jsonl files are read) or manifest files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Write the merged manifest here (one line per shot, by index).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Check file sizes only, not SHA-256 (faster on large runs).
        #[arg(long)]
        no_hash: bool,
        /// The number of shots expected (default: the `total` the lines record).
        #[arg(long)]
        total: Option<usize>,
    },
}

/// At most this many items of each kind of problem are listed.
const LIST: usize = 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Merge {
            paths,
            output,
            no_hash,
            total,
        } => {
            let mut report = match merge(&paths, !no_hash) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("nanobragg-manifest: error: {e}");
                    return ExitCode::from(9);
                }
            };
            if let Some(t) = total {
                if report.total.is_some_and(|r| r != t) {
                    report.inconsistent.push(format!(
                        "the manifests record {} shots, --total says {t}",
                        report.total.unwrap_or(0)
                    ));
                }
                report.total = Some(t);
                report.missing = (0..t).filter(|i| !report.shots.contains_key(i)).collect();
            }
            print_report(&report);
            if let Some(out) = output {
                if let Err(e) = write_merged(&report, &out) {
                    eprintln!("nanobragg-manifest: error: {e}");
                    return ExitCode::from(9);
                }
                println!("wrote {} ({} shots)", out.display(), report.shots.len());
            }
            if report.problems() == 0 {
                println!("OK");
                ExitCode::SUCCESS
            } else {
                println!("PROBLEMS: {}", report.problems());
                ExitCode::from(1)
            }
        }
    }
}

fn print_list(title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    println!("{title} ({}):", items.len());
    for it in items.iter().take(LIST) {
        println!("  {it}");
    }
    if items.len() > LIST {
        println!("  ... and {} more", items.len() - LIST);
    }
}

fn print_report(r: &MergeReport) {
    println!("manifests: {}", r.manifests.len());
    for m in &r.manifests {
        println!("  {}", m.display());
    }
    let total = r.total.map_or("unknown".to_string(), |t| t.to_string());
    println!(
        "shots: {total} in the list, {} present, {} missing, {} duplicated, {} with file problems, {} unreadable lines, {} inconsistent",
        r.shots.len(),
        r.missing.len(),
        r.duplicates.len(),
        r.mismatches.len(),
        r.bad_lines.len(),
        r.inconsistent.len()
    );
    if !r.missing.is_empty() {
        println!("missing shots: {}", ranges(&r.missing));
    }
    let dups: Vec<String> = r
        .duplicates
        .iter()
        .map(|(i, w)| format!("shot {i}: {}", w.join(", ")))
        .collect();
    print_list("duplicates", &dups);
    print_list("file problems", &r.mismatches);
    print_list("unreadable lines", &r.bad_lines);
    print_list("inconsistent lines", &r.inconsistent);
}
