//! The application: the `nanobragg` program ([`program`]), its log ([`console`]), shot
//! lists ([`shots`]) and the suite's `noisify` ([`noisify`]). Behind the `app` feature, on by default.

pub mod console;
pub mod noisify;
pub mod nonbragg;
pub mod program;
pub mod shots;
