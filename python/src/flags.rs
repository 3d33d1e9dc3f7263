//! Flags to a configuration: the command line's own parser, fed from a string, a list, and
//! keyword overrides (`distance=100.0` is `-distance 100`).

use crate::errors::{to_py, value_error};
use nanobragg::experiment::args::{parse_args, Parsed, RunOptions};
use nanobragg::SimConfig;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// Flags as Python gives them: one string split at whitespace, or a sequence of strings.
pub enum Flags {
    Text(String),
    List(Vec<String>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Flags {
    type Error = PyErr;
    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.extract::<String>() {
            return Ok(Flags::Text(s));
        }
        ob.extract::<Vec<String>>()
            .map(Flags::List)
            .map_err(|_| value_error("flags: a string or a list of strings"))
    }
}

impl Flags {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Flags::Text(s) => s.split_whitespace().map(str::to_string).collect(),
            Flags::List(v) => v,
        }
    }
}

/// One keyword override as flag tokens: `name=value` is `-name value`; a list or tuple gives
/// several values (`cell=(100, 100, 100, 90, 90, 90)`), `True` the bare flag (`nopolar=True`),
/// `False` or `None` nothing.
fn keyword_tokens(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let flag = format!("-{name}");
    if value.is_none() {
        return Ok(vec![]);
    }
    if let Ok(b) = value.cast::<pyo3::types::PyBool>() {
        return Ok(if b.is_true() { vec![flag] } else { vec![] });
    }
    let items: Vec<Bound<'_, PyAny>> = if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        value.try_iter()?.collect::<PyResult<_>>()?
    } else {
        vec![value.clone()]
    };
    let mut tokens = vec![flag];
    for item in items {
        tokens.push(item.str()?.to_string());
    }
    Ok(tokens)
}

/// The configuration and run options of `flags` followed by the keyword overrides (later flags
/// win, as on the command line).
pub fn parse(flags: Flags, overrides: Option<&Bound<'_, PyDict>>) -> PyResult<(Vec<String>, SimConfig, RunOptions)> {
    let mut args = flags.into_vec();
    if let Some(kw) = overrides {
        for (k, v) in kw.iter() {
            args.extend(keyword_tokens(&k.extract::<String>()?, &v)?);
        }
    }
    match parse_args(&args).map_err(to_py)? {
        Parsed::Run(cfg, opts) => Ok((args, *cfg, opts)),
        Parsed::Help => Err(value_error(
            "-h asks for the usage text (nanobragg.usage()), not a simulation",
        )),
    }
}
