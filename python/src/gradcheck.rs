//! `nanobragg.gradcheck`: the library's gradcheck (analytic gradient of a loss of the image
//! against central differences, component by component) from Python, with the loss as weights
//! or as a Python function of the float64 image.

use crate::arrays;
use crate::errors::{to_py, value_error};
use crate::simulator::Simulator;
use nanobragg::{ComponentCheck, GradcheckOptions, GradcheckReport};
use numpy::PyArrayLikeDyn;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The result of `gradcheck`: `passed`, the loss at the simulator's parameters, and one dict
/// a component (`name`, `unit`, `x`, `step`, `analytic`, `numeric`, `relative_error`,
/// `passed`). `bool(report)` is `passed`; `str(report)` a table.
#[pyclass(frozen, module = "nanobragg", name = "GradcheckReport")]
pub struct Report(GradcheckReport);

fn check_dict<'py>(py: Python<'py>, c: &ComponentCheck) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &c.name)?;
    d.set_item("unit", &c.unit)?;
    d.set_item("x", c.x)?;
    d.set_item("step", c.step)?;
    d.set_item("analytic", c.analytic)?;
    d.set_item("numeric", c.numeric)?;
    d.set_item("relative_error", c.relative_error)?;
    d.set_item("passed", c.passed)?;
    Ok(d)
}

#[pymethods]
impl Report {
    /// Whether every component passed.
    #[getter]
    fn passed(&self) -> bool {
        self.0.passed()
    }

    /// The loss at the simulator's parameters.
    #[getter]
    fn loss(&self) -> f64 {
        self.0.loss
    }

    /// One dict a component, in the order checked.
    #[getter]
    fn checks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let dicts = self
            .0
            .checks
            .iter()
            .map(|c| check_dict(py, c))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, dicts)
    }

    /// The names of the components that failed.
    #[getter]
    fn failures(&self) -> Vec<String> {
        self.0.failures().map(|c| c.name.clone()).collect()
    }

    fn __bool__(&self) -> bool {
        self.0.passed()
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "<GradcheckReport {} of {} components, loss {:e}>",
            if self.0.passed() { "passed" } else { "FAILED" },
            self.0.checks.len(),
            self.0.loss
        )
    }
}

/// The loss as the library takes it: `None` → its default weights; an array of the image's
/// shape → Σ w·I; a callable `loss(image) -> (value, gradient)` (float64 image of the
/// simulator's shape, gradient of the same shape).
enum PyLoss<'py> {
    Default,
    Weights(Vec<f64>),
    Function(Bound<'py, PyAny>),
}

fn py_loss<'py>(loss: Option<Bound<'py, PyAny>>, pixels: usize) -> PyResult<PyLoss<'py>> {
    let Some(loss) = loss else { return Ok(PyLoss::Default) };
    if loss.is_callable() {
        return Ok(PyLoss::Function(loss));
    }
    let w: PyArrayLikeDyn<'py, f64, numpy::AllowTypeChange> = loss.extract().map_err(|_| {
        value_error(
            "loss: expected None, an array of weights of the image's shape, or a function image -> (value, gradient)",
        )
    })?;
    let w: Vec<f64> = w.as_array().iter().copied().collect();
    if w.len() != pixels {
        return Err(value_error(format!("loss: {} weights for {pixels} pixels", w.len())));
    }
    Ok(PyLoss::Weights(w))
}

/// Calls the Python loss on the image; a Python exception is kept to be raised as it is.
fn call_loss(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    dims: &[usize],
    image: &[f64],
    raised: &mut Option<PyErr>,
) -> nanobragg::Result<(f64, Vec<f64>)> {
    let run = || -> PyResult<(f64, Vec<f64>)> {
        let array = arrays::image(py, image.to_vec(), dims)?;
        let (value, grad): (f64, Bound<'_, PyAny>) = f.call1((array,))?.extract()?;
        let grad: PyArrayLikeDyn<'_, f64, numpy::AllowTypeChange> = grad.extract()?;
        let g = grad.as_array();
        if g.len() != image.len() {
            return Err(value_error(format!(
                "loss: the gradient has shape {:?}, the image {dims:?}",
                g.shape()
            )));
        }
        Ok((value, g.iter().copied().collect()))
    };
    run().map_err(|e| {
        let message = e.to_string();
        *raised = Some(e);
        nanobragg::Error::Config(format!("gradcheck loss: {message}"))
    })
}

/// Steps: `None`, a relative step for every component, or a dict name → step in the
/// component's unit.
fn steps(eps: Option<Bound<'_, PyAny>>, options: &mut GradcheckOptions) -> PyResult<()> {
    let Some(eps) = eps else { return Ok(()) };
    if let Ok(relative) = eps.extract::<f64>() {
        if !(relative > 0.0 && relative.is_finite()) {
            return Err(value_error(format!("eps {relative}: a step must be > 0")));
        }
        options.relative_step = relative;
        return Ok(());
    }
    let steps: Vec<(String, f64)> = eps
        .extract::<std::collections::HashMap<String, f64>>()
        .map_err(|_| value_error("eps: expected a relative step (float) or a dict name -> step"))?
        .into_iter()
        .collect();
    if let Some((name, h)) = steps.iter().find(|(_, h)| !(*h > 0.0 && h.is_finite())) {
        return Err(value_error(format!("eps['{name}'] = {h}: a step must be > 0")));
    }
    options.steps = steps;
    Ok(())
}

/// Compare `sim`'s analytic gradient of `loss` with central differences, for the components
/// `params` names (as `Simulator.derivatives` and `vector` name them: `distance`, `Xbeam`,
/// `cell_a`, `misset_z`, ...; `None`: every one this configuration has), each in its flag's
/// unit (`mosaic`, `fluence`, `water` as logarithms). `loss`: `None` (Σ w·I with fixed
/// weights), an array of weights of the image's shape, or a function `loss(image) ->
/// (value, gradient)` of the float64 image. `eps`: the relative step (default 1e-5 of
/// max(|x|, 1)) or a dict name → step. A component passes when |analytic − numeric| ≤ atol
/// + rtol·max(|analytic|, |numeric|) (plus the loss's rounding, 1e-13·|L|/step). Returns a
/// `GradcheckReport`. On the cpu f64 engine by default.
#[pyfunction]
#[pyo3(signature = (sim, loss=None, params=None, eps=None, rtol=1e-4, atol=1e-8, engine=None, precision=None))]
#[allow(clippy::too_many_arguments)]
pub fn gradcheck<'py>(
    py: Python<'py>,
    sim: &Simulator,
    loss: Option<Bound<'py, PyAny>>,
    params: Option<Vec<String>>,
    eps: Option<Bound<'py, PyAny>>,
    rtol: f64,
    atol: f64,
    engine: Option<&str>,
    precision: Option<&str>,
) -> PyResult<Report> {
    let (cfg, exp) = sim.single("gradcheck")?;
    let engine = sim.engine(engine, precision)?;
    let mut options = GradcheckOptions {
        components: params.unwrap_or_default(),
        rtol,
        atol,
        ..GradcheckOptions::default()
    };
    steps(eps, &mut options)?;
    let dims = sim.dims();
    let mut raised = None;
    let mut weights = Vec::new();
    let mut function = None;
    match py_loss(loss, sim.pixels())? {
        PyLoss::Default => {}
        PyLoss::Weights(w) => weights = w,
        PyLoss::Function(f) => function = Some(f),
    }
    let mut linear = |image: &[f64]| Ok((image.iter().zip(&weights).map(|(i, w)| i * w).sum(), weights.clone()));
    let mut python = |image: &[f64]| call_loss(py, function.as_ref().expect("a function"), &dims, image, &mut raised);
    let loss: Option<&mut nanobragg::refine::gradcheck::ImageLoss<'_>> = match (&function, weights.is_empty()) {
        (Some(_), _) => Some(&mut python),
        (None, false) => Some(&mut linear),
        (None, true) => None,
    };
    // the GIL stays held: the loss may be Python
    let report = engine.gradcheck_at(&sim.point(cfg, exp), loss, &options);
    match (report, raised) {
        (Ok(r), _) => Ok(Report(r)),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(to_py(e)),
    }
}
