//! `nanobragg`: drop-in replacement for the C nanoBragg program. The run itself is
//! [`nanobragg::app::program::main`], shared with the Python package.

use std::process::ExitCode;

fn main() -> ExitCode {
    remove_temporaries_on_signal();
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(nanobragg::app::program::main(&args))
}

/// On SIGINT or SIGTERM, delete the hidden temporary files of outputs being written, then end
/// with status 128 + the signal number, as the default action would report it to a shell.
#[cfg(unix)]
fn remove_temporaries_on_signal() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    // without a handler (it cannot be installed) the signals keep their default action
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            nanobragg::io::atomic::remove_temporary_files();
            std::process::exit(128 + signal);
        }
    });
}

#[cfg(not(unix))]
fn remove_temporaries_on_signal() {}
