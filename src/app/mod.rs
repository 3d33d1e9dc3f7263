//! The application: the `nanobragg` program ([`program`]), its log ([`console`]) and shot
//! lists ([`shots`]). Behind the `app` feature, on by default.

pub mod console;
pub mod program;
pub mod shots;
