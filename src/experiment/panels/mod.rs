//! What a run does with a detector of panels read from a file ([`crate::io::panels`]): one
//! CUSTOM detector each ([`custom`]) and the panels' rigid motions ([`motion`]).

pub mod custom;
pub mod motion;
