//! The program's log on standard output, written without panicking: a reader that went away
//! silences it, any other failure is an error.

use crate::base::error::{Error, Result};
use std::io::{ErrorKind, Write};

/// A text sink for the command-line log (C's `printf`s).
///
/// * A closed pipe (`EPIPE`, e.g. `nanobragg … | head -1`): the rest of the log is dropped
///   quietly and the run goes on, so its output files are still written and it exits 0.
/// * Any other write error (e.g. `ENOSPC` for `> /dev/full`) is returned as an
///   [`Error::Io`] naming standard output; the caller stops there, so files written before
///   stay whole and no file is left half written.
pub struct Console<W: Write> {
    out: W,
    /// The reader has gone: everything else is discarded.
    closed: bool,
}

/// C exits with 9 on bad input; so do our programs, for every error.
pub const EXIT_ERROR: u8 = 9;

/// A program's exit status: runs `body` with its log on `con` and flushes it; 0, or after an
/// error `<program>: error: …` on standard error (never a panic, even if that fails) and
/// [`EXIT_ERROR`].
pub fn exit_status<W: Write>(
    program: &str,
    con: &mut Console<W>,
    body: impl FnOnce(&mut Console<W>) -> Result<()>,
) -> u8 {
    match body(con).and_then(|()| con.flush()) {
        Ok(()) => 0,
        Err(e) => {
            let _ = con.flush();
            let _ = writeln!(std::io::stderr(), "{program}: error: {e}");
            EXIT_ERROR
        }
    }
}

/// The name errors give for standard output.
pub const STDOUT_NAME: &str = "standard output";

impl Console<std::io::Stdout> {
    /// The process's standard output.
    pub fn stdout() -> Self {
        Self::new(std::io::stdout())
    }
}

impl<W: Write> Console<W> {
    /// A console writing to `out`.
    pub fn new(out: W) -> Self {
        Self { out, closed: false }
    }

    /// Whether the reader has gone and output is being discarded.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Writes formatted text (so `write!`/`writeln!` work on a console).
    pub fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let written = self.out.write_fmt(args);
        self.check(written)
    }

    /// Flushes buffered text.
    pub fn flush(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let flushed = self.out.flush();
        self.check(flushed)
    }

    fn check(&mut self, r: std::io::Result<()>) -> Result<()> {
        match r {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(Error::io(STDOUT_NAME, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails every write with `kind` after `ok` successful ones.
    struct Failing {
        ok: usize,
        kind: ErrorKind,
        got: Vec<u8>,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.ok == 0 {
                return Err(std::io::Error::from(self.kind));
            }
            self.ok -= 1;
            self.got.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn broken_pipe_silences_the_rest() {
        let mut c = Console::new(Failing {
            ok: 1,
            kind: ErrorKind::BrokenPipe,
            got: Vec::new(),
        });
        writeln!(c, "first").unwrap();
        assert!(!c.is_closed());
        writeln!(c, "second {}", 2).unwrap();
        assert!(c.is_closed());
        writeln!(c, "third").unwrap();
        c.flush().unwrap();
        assert_eq!(c.out.got, b"first\n");
    }

    #[test]
    fn other_errors_name_standard_output() {
        let mut c = Console::new(Failing {
            ok: 0,
            kind: ErrorKind::StorageFull,
            got: Vec::new(),
        });
        let e = writeln!(c, "x").unwrap_err();
        assert!(e.to_string().starts_with(STDOUT_NAME), "{e}");
        assert!(!c.is_closed());
    }
}
