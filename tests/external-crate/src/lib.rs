//! Nothing of its own: this crate exists to call nanobragg from outside (see `tests/`).
