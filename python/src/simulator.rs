//! The `Simulator` class: a configuration from the C flags, rendered, differentiated and moved
//! from Python. Immutable: `with_parameters` and `with_vector` return moved copies, so one
//! simulator may be used from several Python threads at once.

use crate::arrays;
use crate::errors::{detached, to_py, value_error};
use crate::flags::{self, Flags};
use crate::writers::{write, Format};
use nanobragg::app::program::render_options;
use nanobragg::config::SimConfig;
use nanobragg::engine::{Engine, EngineKind, Precision};
use nanobragg::experiment::args::RunOptions;
use nanobragg::experiment::load_structure_factors;
use nanobragg::experiment::panels::custom::panel_configs;
use nanobragg::refine::{Loss, LossRequest};
use nanobragg::render::output::Statistics;
use nanobragg::render::{Image, RenderOptions};
use nanobragg::Experiment;
use numpy::{AllowTypeChange, PyArrayLikeDyn};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::Arc;

/// Structure factors as four arrays: h, k, l (integers) and F (electrons).
type Reflections = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<f64>);

/// `(h, k, l, F)` arrays as an HKL text file for `-hkl`: the command line's own reader takes
/// them (same grid, same defaults), then the file goes.
fn hkl_file(hkl: Reflections) -> PyResult<tempfile::NamedTempFile> {
    use std::io::Write;
    let (h, k, l, f) = hkl;
    if [k.len(), l.len(), f.len()].iter().any(|&n| n != h.len()) {
        return Err(value_error(format!(
            "structure_factors: h, k, l and F differ in length ({}, {}, {}, {})",
            h.len(),
            k.len(),
            l.len(),
            f.len()
        )));
    }
    let io = |e: std::io::Error| pyo3::exceptions::PyOSError::new_err(format!("structure_factors: {e}"));
    let mut file = tempfile::Builder::new().suffix(".hkl").tempfile().map_err(io)?;
    let mut text = String::with_capacity(32 * h.len());
    for i in 0..h.len() {
        // Display of an f64 is the shortest text that reads back as the same number
        text.push_str(&format!("{} {} {} {}\n", h[i], k[i], l[i], f[i]));
    }
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(file)
}

/// What the flags resolved once, shared by a simulator and its moved copies.
struct Setup {
    flags: Vec<String>,
    run_opts: RunOptions,
    render: RenderOptions,
    /// One configuration and experiment per panel: one for a flat detector, each panel's own
    /// CUSTOM detector for `-geom`/`-detector_expt` (as the binary renders them).
    panels: Vec<(SimConfig, Experiment)>,
    /// A detector of several panels: images are `(panels, slow, fast)`.
    stacked: bool,
}

/// A nanoBragg simulation, from the C program's flags (same flags, units and defaults).
///
/// Images are float32 numpy arrays `(slow, fast)` of photons per pixel, or `(panels, slow,
/// fast)` for a detector of several panels (`-geom`, `-detector_expt`).
#[pyclass(frozen, module = "nanobragg")]
pub struct Simulator {
    setup: Arc<Setup>,
    /// Parameters moved from the configuration's values (`with_parameters`).
    values: Vec<(String, Vec<f64>)>,
}

impl Simulator {
    /// The engine `engine` and `precision` pick, else the flags' (`-engine`, `-precision`).
    pub(crate) fn engine(&self, engine: Option<&str>, precision: Option<&str>) -> PyResult<Engine> {
        let o = &self.setup.run_opts;
        let kind = match engine {
            None => o.engine,
            Some("cpu") => EngineKind::Cpu,
            Some("wgpu") => EngineKind::Wgpu,
            Some(other) => return Err(value_error(format!("engine '{other}': expected 'cpu' or 'wgpu'"))),
        };
        let precision = match precision {
            None => o.precision,
            Some("f64") => Some(Precision::F64),
            Some("f32") => Some(Precision::F32),
            Some(other) => return Err(value_error(format!("precision '{other}': expected 'f64' or 'f32'"))),
        };
        Engine::select(kind, precision, o.fusion).map_err(to_py)
    }

    /// The one panel's configuration and experiment; gradients and moved parameters are for a
    /// detector of one panel.
    pub(crate) fn single(&self, what: &str) -> PyResult<&(SimConfig, Experiment)> {
        if self.setup.stacked {
            return Err(value_error(format!(
                "{what}: this simulator has a detector of several panels (-geom/-detector_expt); {what} is for one panel"
            )));
        }
        Ok(&self.setup.panels[0])
    }

    /// This simulator's point for the library's engine methods (`Engine::render_at`,
    /// `Engine::image_vjp_at`, ...), which adapt the render options to the engine themselves.
    pub(crate) fn point<'a>(&'a self, cfg: &'a SimConfig, exp: &'a Experiment) -> nanobragg::gradients::At<'a> {
        nanobragg::gradients::At {
            cfg,
            exp,
            values: &self.values,
            opts: &self.setup.render,
        }
    }

    pub(crate) fn dims(&self) -> Vec<usize> {
        let d = &self.setup.panels[0].1.detector;
        match self.setup.stacked {
            true => vec![self.setup.panels.len(), d.spixels, d.fpixels],
            false => vec![d.spixels, d.fpixels],
        }
    }

    pub(crate) fn pixels(&self) -> usize {
        self.dims().iter().product()
    }

    fn write(
        &self,
        py: Python<'_>,
        format: Format,
        path: std::path::PathBuf,
        image: PyArrayLikeDyn<'_, f32, AllowTypeChange>,
    ) -> PyResult<f64> {
        let (cfg, exp) = self.single("write")?;
        let data = arrays::pixels("image", &image, self.pixels())?;
        detached(py, move || write(format, &path, cfg, exp, data))
    }

    fn moved(&self, values: Vec<(String, Vec<f64>)>) -> Simulator {
        Simulator {
            setup: self.setup.clone(),
            values,
        }
    }
}

/// C's printed statistics of an image, as a dict (photons; positions in m), and the time the
/// render took in Rust.
fn statistics_dict<'py>(
    py: Python<'py>,
    exp: &Experiment,
    image: &Image,
    seconds: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let s = Statistics::of(exp, image);
    let d = PyDict::new(py);
    d.set_item("max_I", s.max_i)?;
    d.set_item("max_I_fast_m", s.max_at.0)?;
    d.set_item("max_I_slow_m", s.max_at.1)?;
    d.set_item("mean", s.mean)?;
    d.set_item("rms", s.rms)?;
    d.set_item("rmsd", s.rmsd)?;
    d.set_item("rendered_pixels", s.rendered)?;
    d.set_item("solid_angle_sr", image.omega_sum / exp.steps as f64)?;
    // the render's own time in Rust (all panels), without the Python call around it
    d.set_item("render_seconds", seconds)?;
    Ok(d)
}

#[pymethods]
impl Simulator {
    /// A simulator from the C flags: a list of strings, or one string split at whitespace,
    /// then keyword overrides (`distance=100.0` is `-distance 100`; a tuple gives several
    /// values; `nopolar=True` a bare flag). Output flags are accepted and ignored. Structure
    /// factors are read as the binary reads them (`-hkl`, else `Fdump.bin`, else `-default_F`).
    ///
    /// `structure_factors=(h, k, l, F)`, four arrays of one length, gives the structure
    /// factors as an HKL file would (`-hkl`; the grid spans the indices given, `-default_F`
    /// elsewhere).
    #[staticmethod]
    #[pyo3(signature = (flags, structure_factors=None, **overrides))]
    fn from_flags(
        py: Python<'_>,
        flags: Flags,
        structure_factors: Option<Reflections>,
        overrides: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Simulator> {
        let hkl = structure_factors.map(hkl_file).transpose()?;
        let flags = match &hkl {
            None => flags,
            Some(file) => {
                let mut v = flags.into_vec();
                v.extend(["-hkl".to_string(), file.path().display().to_string()]);
                Flags::List(v)
            }
        };
        let (args, cfg, run_opts) = flags::parse(flags, overrides)?;
        let setup = detached(py, move || {
            let threads = run_opts.apply_threads()?;
            let render = render_options(&cfg, &run_opts, threads);
            let grid = load_structure_factors(&cfg)?;
            let (panels, stacked) = match &cfg.detector.panels {
                None => (
                    vec![(cfg.clone(), Experiment::with_structure_factors(&cfg, grid)?)],
                    false,
                ),
                Some(layout) => {
                    let configs = panel_configs(&cfg, layout, "-geom/-detector_expt")?;
                    let panels = configs
                        .into_iter()
                        .map(|pc| {
                            let exp = Experiment::with_structure_factors(&pc, grid.clone())?;
                            Ok((pc, exp))
                        })
                        .collect::<nanobragg::Result<Vec<_>>>()?;
                    (panels, true)
                }
            };
            Ok(Setup {
                flags: args,
                run_opts,
                render,
                panels,
                stacked,
            })
        })?;
        let d = &setup.panels[0].1.detector;
        if setup.stacked
            && setup
                .panels
                .iter()
                .any(|(_, e)| (e.detector.fpixels, e.detector.spixels) != (d.fpixels, d.spixels))
        {
            return Err(value_error(
                "-geom/-detector_expt: the panels differ in size; an array (panels, slow, fast) needs panels of one size",
            ));
        }
        Ok(Simulator {
            setup: Arc::new(setup),
            values: Vec::new(),
        })
    }

    /// The flags this simulator was made from (keyword overrides appended).
    #[getter]
    fn flags(&self) -> Vec<String> {
        self.setup.flags.clone()
    }

    /// `(slow, fast)`, or `(panels, slow, fast)`.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.dims())
    }

    /// The image: float32 photons per pixel, `(slow, fast)` or `(panels, slow, fast)`; at the
    /// configuration's own parameters the very values of the binary's `-floatfile`. `engine`
    /// 'cpu' or 'wgpu' and `precision` 'f64' or 'f32' default to the flags' (`-engine`,
    /// `-precision`; cpu f64). With `statistics=True` it returns `(image, stats)`, `stats` C's
    /// printed statistics (`max_I`, `mean`, `rms`, `rmsd`, ...; a list of dicts, one a panel,
    /// for several panels). `dtype=numpy.float64` returns the cpu f64 engine's image before
    /// C's rounding to float32 (for finite differences below 1e-5 relative). The GIL is
    /// released while it renders.
    #[pyo3(signature = (engine=None, precision=None, statistics=false, dtype=None))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        engine: Option<&str>,
        precision: Option<&str>,
        statistics: bool,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let engine = self.engine(engine, precision)?;
        if wants_float64(py, dtype)? {
            return self.render_f64(py, engine, statistics);
        }
        let start = std::time::Instant::now();
        let images = detached(py, || {
            self.setup
                .panels
                .iter()
                .map(|(cfg, exp)| match self.values.is_empty() {
                    true => engine.render(exp, &self.setup.render),
                    false => engine.render_at(&self.point(cfg, exp)),
                })
                .collect::<nanobragg::Result<Vec<Image>>>()
        })?;
        let seconds = start.elapsed().as_secs_f64();
        self.with_statistics(py, images, statistics, seconds)
    }

    /// Every continuous parameter, name → float64 array, in the library's units: `cell` (Å,
    /// rad), `misset` (rad), `phi` (rad), `mosaic_spread` (rad), `distance` (m),
    /// `close_distance` (m, when given), `beam_center` (m), `detector_rotation` (rad),
    /// `twotheta` (rad), `lambda0` (m), `fluence` (photons/m²), `n_cells`, `polarization`,
    /// `water_size` (m), `default_f` (electrons), `dispersion` (fraction), `structure_factors`
    /// (electrons, when an HKL grid was read).
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (cfg, exp) = self.single("parameters")?;
        let engine = Engine::default();
        let values = detached(py, || engine.values_at(&self.point(cfg, exp)))?;
        let d = PyDict::new(py);
        for (name, v) in values {
            d.set_item(name, arrays::vector(py, v))?;
        }
        Ok(d)
    }

    /// A copy with parameters moved: `with_parameters(distance=[0.101], cell=[...])`, names and
    /// units as `parameters`, each with its full number of components.
    #[pyo3(signature = (**values))]
    fn with_parameters(&self, py: Python<'_>, values: Option<&Bound<'_, PyDict>>) -> PyResult<Simulator> {
        let (cfg, exp) = self.single("with_parameters")?;
        let mut merged = self.values.clone();
        if let Some(values) = values {
            for (k, v) in values.iter() {
                let name: String = k.extract()?;
                let v: Vec<f64> = match v.extract::<f64>() {
                    Ok(x) => vec![x],
                    Err(_) => v.extract::<Vec<f64>>()?,
                };
                merged.retain(|(n, _)| *n != name);
                merged.push((name, v));
            }
        }
        // checked now: names and sizes
        let engine = Engine::default();
        let at = nanobragg::gradients::At {
            values: &merged,
            ..self.point(cfg, exp)
        };
        detached(py, || engine.values_at(&at))?;
        Ok(self.moved(merged))
    }

    /// ∂(Σ_p w_p·I_p)/∂θ for every parameter θ (names and units as `parameters`): `weights` an
    /// array of the image's shape, `None` for all ones. Returns a dict name → float64 array.
    #[pyo3(signature = (weights=None, engine=None, precision=None))]
    fn gradient<'py>(
        &self,
        py: Python<'py>,
        weights: Option<PyArrayLikeDyn<'py, f32, AllowTypeChange>>,
        engine: Option<&str>,
        precision: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (cfg, exp) = self.single("gradient")?;
        let engine = self.engine(engine, precision)?;
        let w = weights
            .map(|w| arrays::pixels("weights", &w, self.pixels()))
            .transpose()?;
        let at = self.point(cfg, exp);
        let (_, grads) = detached(py, || engine.image_vjp_at(&at, w.as_deref()))?;
        let d = PyDict::new(py);
        for g in grads {
            d.set_item(g.name, arrays::vector(py, g.values))?;
        }
        Ok(d)
    }

    /// Derivative images ∂I/∂θ for the named components, name → float32 array of the image's
    /// shape, per unit of the component's flag: `distance`, `close_distance`, `Xbeam`,
    /// `Ybeam` per mm; `cell_a/b/c`, `lambda` per Å; `cell_alpha/beta/gamma`, `misset_x/y/z`,
    /// `phi`, `phistep`, `mosaic`, `detector_rotx/y/z`, `twotheta` per degree; `Na/Nb/Nc` per
    /// cell; `dispersion` per %; `polar` per unit of K; `fluence` per photon/m²; `default_F`
    /// per electron; `water` per µm. Exact (no finite differences).
    #[pyo3(signature = (names, engine=None, precision=None))]
    fn derivatives<'py>(
        &self,
        py: Python<'py>,
        names: Vec<String>,
        engine: Option<&str>,
        precision: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (cfg, exp) = self.single("derivatives")?;
        let engine = self.engine(engine, precision)?;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let at = self.point(cfg, exp);
        let images = detached(py, || engine.derivatives_at(&at, &refs))?;
        let d = PyDict::new(py);
        for (name, image) in names.iter().zip(images) {
            d.set_item(name, arrays::image(py, image.data, &self.dims())?)?;
        }
        Ok(d)
    }

    /// The vector `x` of the named components (names as `derivatives`): each in its flag's unit
    /// (mm, °, Å, ...), except `mosaic`, `fluence` and `water`, which are logarithms (of °, of
    /// the fluence relative to this simulator's, of µm). The order is the order of `names`.
    /// `psf_fwhm` (ln of the flags' µm) and `background_scale` (0: ln 1) are the detector
    /// response's, for `loss_and_gradient`.
    fn vector<'py>(&self, py: Python<'py>, names: Vec<String>) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let (cfg, exp) = self.single("vector")?;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let engine = Engine::default();
        let x = detached(py, || engine.read_vector_at(&self.point(cfg, exp), &refs))?;
        Ok(arrays::vector(py, x))
    }

    /// A copy with the named components set from `x` (as `vector` reads them).
    fn with_vector(&self, py: Python<'_>, names: Vec<String>, x: Vec<f64>) -> PyResult<Simulator> {
        let (cfg, exp) = self.single("with_vector")?;
        if x.len() != names.len() {
            return Err(value_error(format!("{} values for {} names", x.len(), names.len())));
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let engine = Engine::default();
        let values = detached(py, || engine.write_vector_at(&self.point(cfg, exp), &refs, &x))?;
        Ok(self.moved(values.into_iter().map(|(n, v)| (n.to_string(), v)).collect()))
    }

    /// `(f, g)`: the loss of the image at `x` against `observed` (photons per pixel, the image's
    /// shape) and its gradient over `x`, the vector of the components `parameters` (as
    /// `vector`; `x=None` is this simulator's own). `loss` is 'poisson' (half the Poisson
    /// deviance, Σ I − k − k·ln(I/k)) or 'least_squares' (½ Σ (I − k)²); `mask` a boolean
    /// array, True where a pixel counts. The shape `scipy.optimize.minimize(fun, x0,
    /// jac=True)` takes: `fun = lambda x: sim.loss_and_gradient(obs, parameters=names, x=x)`.
    ///
    /// The model compared with `observed` is the image plus `background` (photons per pixel
    /// at scale 1, the image's shape) times its scale, spread by the flags' PSF (`-psf`,
    /// `-psf_fwhm`, `-psf_radius`); `parameters` may name `psf_fwhm` (x = ln µm) and
    /// `background_scale` (x = ln of the scale, 0 at 1) beside the simulator's components.
    #[pyo3(signature = (observed, loss="poisson", mask=None, parameters=None, x=None, engine=None, precision=None, background=None))]
    #[allow(clippy::too_many_arguments)]
    fn loss_and_gradient<'py>(
        &self,
        py: Python<'py>,
        observed: PyArrayLikeDyn<'py, f32, AllowTypeChange>,
        loss: &str,
        mask: Option<PyArrayLikeDyn<'py, bool, AllowTypeChange>>,
        parameters: Option<Vec<String>>,
        x: Option<Vec<f64>>,
        engine: Option<&str>,
        precision: Option<&str>,
        background: Option<PyArrayLikeDyn<'py, f64, AllowTypeChange>>,
    ) -> PyResult<(f64, Bound<'py, numpy::PyArray1<f64>>)> {
        let (cfg, exp) = self.single("loss_and_gradient")?;
        let engine = self.engine(engine, precision)?;
        let loss = match loss {
            "poisson" => Loss::default(),
            "least_squares" => Loss::LeastSquares { poisson_weights: false },
            other => {
                return Err(value_error(format!(
                    "loss '{other}': expected 'poisson' or 'least_squares'"
                )))
            }
        };
        let observed = arrays::pixels("observed", &observed, self.pixels())?;
        let mask = mask.map(|m| arrays::pixels("mask", &m, observed.len())).transpose()?;
        let background = background
            .map(|b| arrays::pixels("background", &b, observed.len()))
            .transpose()?;
        let names = parameters.unwrap_or_else(|| vec!["distance".into(), "Xbeam".into(), "Ybeam".into()]);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        if x.as_ref().is_some_and(|x| x.len() != refs.len()) {
            return Err(value_error(format!(
                "x has {} values for {} parameters",
                x.map_or(0, |x| x.len()),
                refs.len()
            )));
        }
        let request = LossRequest {
            labels: &refs,
            x: x.as_deref(),
            observed: &observed,
            mask: mask.as_deref(),
            loss,
            background: background.as_deref(),
        };
        let (f, g) = detached(py, || engine.loss_and_gradient_at(&self.point(cfg, exp), &request))?;
        Ok((f, arrays::vector(py, g)))
    }

    /// Write `image` (photons per pixel, this simulator's shape, one panel) as an SMV file,
    /// 2-byte integers as the binary's `-intfile` (scale: the flags' `-scale`, else C's
    /// automatic one; offset `-adc`). Returns the scale.
    fn write_smv(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        image: PyArrayLikeDyn<'_, f32, AllowTypeChange>,
    ) -> PyResult<f64> {
        self.write(py, Format::Smv, path, image)
    }

    /// Write `image` as a miniCBF file, 4-byte integers as the binary's `-cbffile`. Returns the
    /// scale.
    fn write_cbf(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        image: PyArrayLikeDyn<'_, f32, AllowTypeChange>,
    ) -> PyResult<f64> {
        self.write(py, Format::Cbf, path, image)
    }

    /// Write `image` as a NeXus NXmx file (HDF5), counts and photons, as the binary's
    /// `-nexusfile`. Returns the scale.
    fn write_nexus(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        image: PyArrayLikeDyn<'_, f32, AllowTypeChange>,
    ) -> PyResult<f64> {
        self.write(py, Format::Nexus, path, image)
    }

    /// Shot renders: one image per orientation, float32 `(n, slow, fast)`. `matrices` is
    /// `(n, 3, 3)` (or one `(3, 3)`): MOSFLM A matrices as a `-mat` file or a shot list's
    /// `mat` gives them, rows `a*x b*x c*x`, `a*y b*y c*y`, `a*z b*z c*z` (reciprocal vectors in
    /// Å⁻¹ times λ in Å); each shot is the flags with that matrix, as the binary renders it.
    #[pyo3(signature = (matrices, engine=None, precision=None))]
    fn render_shots<'py>(
        &self,
        py: Python<'py>,
        matrices: PyArrayLikeDyn<'py, f64, AllowTypeChange>,
        engine: Option<&str>,
        precision: Option<&str>,
    ) -> PyResult<Bound<'py, numpy::PyArrayDyn<f32>>> {
        let (cfg, exp) = self.single("render_shots")?;
        if !self.values.is_empty() {
            return Err(value_error(
                "render_shots renders at the flags' parameters: call it on a simulator that was not moved",
            ));
        }
        let m = matrices.as_array();
        let n = match m.shape() {
            [3, 3] => 1,
            [n, 3, 3] => *n,
            other => return Err(value_error(format!("matrices: shape (n, 3, 3), not {other:?}"))),
        };
        let flat: Vec<f64> = m.iter().copied().collect();
        let mats: Vec<[[f64; 3]; 3]> = flat
            .chunks(9)
            .map(|c| [[c[0], c[1], c[2]], [c[3], c[4], c[5]], [c[6], c[7], c[8]]])
            .collect();
        let engine = self.engine(engine, precision)?;
        let grid = exp.structure_factors.grid.clone();
        let data = detached(py, || {
            let mut data = Vec::with_capacity(n * exp.detector.pixels());
            for m in &mats {
                let mut shot = cfg.clone();
                shot.crystal.matrix = Some(*m);
                let e = Experiment::with_structure_factors(&shot, grid.clone())?;
                data.extend(engine.render(&e, &self.setup.render)?.data);
            }
            Ok(data)
        })?;
        let d = &exp.detector;
        arrays::image(py, data, &[n, d.spixels, d.fpixels])
    }

    fn __repr__(&self) -> String {
        format!("nanobragg.Simulator({:?})", self.setup.flags.join(" "))
    }
}

impl Simulator {
    /// `images` (one a panel) as the array `render` returns, with C's statistics when asked.
    fn with_statistics(
        &self,
        py: Python<'_>,
        images: Vec<Image>,
        statistics: bool,
        seconds: f64,
    ) -> PyResult<Py<PyAny>> {
        let stats = match statistics {
            false => None,
            true => Some(
                self.setup
                    .panels
                    .iter()
                    .zip(&images)
                    .map(|((_, exp), image)| statistics_dict(py, exp, image, seconds))
                    .collect::<PyResult<Vec<_>>>()?,
            ),
        };
        let data = match images.len() {
            1 => images.into_iter().next().expect("one").data,
            _ => images.into_iter().flat_map(|i| i.data).collect(),
        };
        let array = arrays::image(py, data, &self.dims())?.into_any().unbind();
        Ok(match stats {
            None => array,
            Some(mut s) if !self.setup.stacked => (array, s.remove(0)).into_pyobject(py)?.into_any().unbind(),
            Some(s) => (array, s).into_pyobject(py)?.into_any().unbind(),
        })
    }

    /// `render(dtype=numpy.float64)`: the f64 engine's image before C's rounding to float32
    /// (the forward pass of the library's `Simulator`, one thread).
    fn render_f64(&self, py: Python<'_>, engine: Engine, statistics: bool) -> PyResult<Py<PyAny>> {
        if statistics {
            return Err(value_error(
                "dtype=float64 with statistics=True: C's statistics are of the float32 image; call render(statistics=True) for them",
            ));
        }
        if !matches!(
            engine,
            Engine::Cpu {
                precision: Precision::F64,
                ..
            }
        ) {
            return Err(value_error(format!(
                "dtype=float64: the {} engine computes in f32; float64 images come from the cpu engine in f64",
                engine.name()
            )));
        }
        let values = detached(py, || {
            self.setup
                .panels
                .iter()
                .map(|(cfg, exp)| engine.image_values_at(&self.point(cfg, exp)))
                .collect::<nanobragg::Result<Vec<Vec<f64>>>>()
        })?;
        Ok(arrays::image(py, values.concat(), &self.dims())?.into_any().unbind())
    }
}

/// Whether `dtype` asks for float64 (numpy's float64, `"float64"`, `"f8"`, `float`); float32
/// (the default) otherwise, any other dtype an error.
fn wants_float64(py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let Some(dtype) = dtype else { return Ok(false) };
    let name: String = py
        .import("numpy")?
        .getattr("dtype")?
        .call1((dtype,))?
        .getattr("name")?
        .extract()?;
    match name.as_str() {
        "float64" => Ok(true),
        "float32" => Ok(false),
        other => Err(value_error(format!(
            "dtype {other}: expected numpy.float32 or numpy.float64"
        ))),
    }
}
