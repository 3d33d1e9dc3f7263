//! Fuzz target: `nanobragg_fuzz::mat` on arbitrary bytes must never panic, hang or abort.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nanobragg_fuzz::mat(data));
