"""Type stubs of the `nanobragg` extension module (docs/python.md).

Units: images are photons per pixel; `parameters`, `with_parameters` and `gradient` use the
library's units (lengths in m, angles in rad, cell lengths in Å, fluence in photons/m²,
`default_f` in electrons); `derivatives`, `vector`, `loss_and_gradient` and `gradcheck` use the
command-line flags' units (mm, °, Å, cells, %, µm; `mosaic`, `fluence` and `water` as
logarithms in `vector`).
"""

from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

Flags = Union[str, Sequence[str]]
Path = Union[str, PathLike[str]]
FloatArray = npt.NDArray[np.float64]
ImageArray = npt.NDArray[np.float32]

def main(argv: Flags) -> int:
    """Run the `nanobragg` command line in this process (argv without the program name): the
    same log, files and exit status (0, or 9 after `nanobragg: error: ...` on stderr)."""

def usage() -> str:
    """The `-h` text: every flag with its values and units."""

def gpu_adapters() -> List[Dict[str, Any]]:
    """The wgpu adapters of this machine (`index`, `name`, `device_type`, `backend`, `driver`),
    in the order `select_gpu` and `-gpu N` count them. RuntimeError when the graphics API
    cannot be asked."""

def select_gpu(choice: Union[int, str]) -> Dict[str, Any]:
    """Choose the wgpu engine's adapter for this process, before its first wgpu render: an index
    in `gpu_adapters()` or a part of one adapter's name (any case). ValueError when none or
    several match, or another adapter is already in use."""

def read_image(path: Path, adc: float = 0.0, gain: float = 1.0) -> Tuple[FloatArray, Dict[str, Any]]:
    """An SMV, miniCBF or NeXus NXmx image: `(pixels, header)`. `pixels` is float64 `(slow,
    fast)` (`(frames, slow, fast)` for a NeXus stack), photons per pixel = (counts - adc) / gain,
    `adc` in ADU (nanoBragg's `-adc`, 40 for its noise images), `gain` in ADU per photon.
    `header`: the file's header values as text, plus `format`, `adc_offset` and `gain`."""

def noisify_main(argv: Flags) -> int:
    """Run the `noisify` program on `argv` (its flags, without the program name), as the binary
    does: prints C's log, writes the images, returns the exit status (0, or 9)."""

def nonbragg_main(argv: Flags) -> int:
    """Run the `nonbragg` program (the C suite's `nonBragg`) on `argv` (its flags, without the
    program name), as the binary does: prints C's log, writes the images, returns the exit
    status (0, or 9)."""

def nonbragg_image(argv: Flags) -> ImageArray:
    """The amorphous-background image `nonbragg` renders for `argv`, float32 `(slow, fast)`
    photons per pixel; nothing is printed or written. Bad flags or tables raise ValueError."""

def read_stol(path: Path, units: str = "stol") -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """A `.stol` table as `(stol, F)`: sin(theta)/lambda in 1/Angstrom (the first column read as
    `'stol'`, `'4stol'` or `'Q'`) and F in electrons. A malformed table raises ValueError
    naming the file and line."""

def stol_structure_factor(
    path: Path, stol: npt.ArrayLike, units: str = "stol"
) -> npt.NDArray[np.float64]:
    """F of the table at `path` at each sin(theta)/lambda of `stol` (1/Angstrom), interpolated
    as `nonbragg` does (the cubic through the four nearest points)."""

def apply_psf(image: npt.ArrayLike, psf: str, fwhm: float, radius: int = 0) -> ImageArray:
    """`image` (2-D, photons/pixel) blurred by a `'gauss'` or `'fiber'` point-spread function
    of FWHM `fwhm` pixels, as `noisify` does (`radius` 0: chosen per pixel). float32."""

def add_noise(
    image: npt.ArrayLike,
    seed: int,
    calib_seed: Optional[int] = None,
    scale: float = 1.0,
    flicker: float = 0.0,
    calibration: float = 0.03,
    readout: float = 0.0,
    gain: float = 1.0,
    adc: float = 40.0,
    psf: Optional[str] = None,
    psf_fwhm: float = 0.46,
    psf_radius: int = 0,
    bits: int = 16,
) -> Tuple[Any, Any]:
    """`noisify`'s chain on `image` (2-D, photons/pixel): `(ideal, noisy)`, its `-intfile` and
    `-noisefile` images as uint16 (`bits=16`) or uint32 (`bits=32`), C's bit for bit with the
    same seeds. `psf_fwhm` and `psf_radius` in pixels, `readout` and `adc` in ADU."""

class GradcheckReport:
    """The result of `gradcheck`; `bool(report)` is `report.passed`, `str(report)` a table."""

    @property
    def passed(self) -> bool: ...
    @property
    def loss(self) -> float:
        """The loss at the simulator's parameters."""
    @property
    def checks(self) -> List[Dict[str, Any]]:
        """One dict a component: `name`, `unit`, `x`, `step` (the component's unit), `analytic`,
        `numeric` (loss per unit), `relative_error`, `passed`."""
    @property
    def failures(self) -> List[str]:
        """The names of the components that failed."""
    def __bool__(self) -> bool: ...

def gradcheck(
    sim: "Simulator",
    loss: Union[None, npt.ArrayLike, Callable[[FloatArray], Tuple[float, npt.ArrayLike]]] = None,
    params: Optional[Sequence[str]] = None,
    eps: Union[None, float, Dict[str, float]] = None,
    rtol: float = 1e-4,
    atol: float = 1e-8,
    engine: Optional[str] = None,
    precision: Optional[str] = None,
) -> GradcheckReport:
    """Compare `sim`'s analytic gradient of `loss` with central differences, component by
    component (names as `Simulator.derivatives`; None: every one the configuration has), in the
    flags' units. `loss`: None (Σ w·I with fixed weights), weights of the image's shape, or
    `loss(image) -> (value, gradient)` of the float64 image. `eps`: a relative step (default
    1e-5 of max(|x|, 1)) or a dict name -> step. Passes when |analytic - numeric| <= atol +
    rtol·max(|analytic|, |numeric|) + 1e-13·|loss|/step."""

class Simulator:
    """A nanoBragg simulation from the C program's flags (same flags, units and defaults).
    Immutable: `with_parameters` and `with_vector` return moved copies; safe to share between
    threads."""

    @staticmethod
    def from_flags(
        flags: Flags,
        structure_factors: Optional[Tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike, npt.ArrayLike]] = None,
        **overrides: Any,
    ) -> "Simulator":
        """Flags as a list or one string; keyword overrides are flags (`distance=100.0` is
        `-distance 100`). `structure_factors=(h, k, l, F)`: F in electrons, as `-hkl` reads."""
    @property
    def flags(self) -> List[str]: ...
    @property
    def shape(self) -> Tuple[int, ...]:
        """`(slow, fast)`, or `(panels, slow, fast)`."""
    def render(
        self,
        engine: Optional[str] = None,
        precision: Optional[str] = None,
        statistics: bool = False,
        dtype: Any = None,
    ) -> Union[npt.NDArray[Any], Tuple[ImageArray, Any]]:
        """The image, photons per pixel: float32 (the binary's `-floatfile`), or with
        `dtype=numpy.float64` the cpu f64 engine's values before that rounding. `engine` 'cpu'
        or 'wgpu', `precision` 'f64' or 'f32'. `statistics=True`: `(image, stats)`, C's
        printed statistics (photons; positions in m)."""
    @property
    def parameters(self) -> Dict[str, FloatArray]:
        """Every continuous parameter in the library's units (m, rad, Å for the cell,
        photons/m², electrons)."""
    def with_parameters(self, **values: Union[float, Sequence[float]]) -> "Simulator": ...
    def gradient(
        self, weights: Optional[npt.ArrayLike] = None, engine: Optional[str] = None, precision: Optional[str] = None
    ) -> Dict[str, FloatArray]:
        """∂(Σ w·I)/∂θ per unit of `parameters`."""
    def derivatives(
        self, names: Sequence[str], engine: Optional[str] = None, precision: Optional[str] = None
    ) -> Dict[str, ImageArray]:
        """∂I/∂θ images per unit of the flag (mm, Å, °, cells, %, K, photons/m², electrons, µm)."""
    def vector(self, names: Sequence[str]) -> FloatArray:
        """The components' values in the flags' units (`mosaic`, `fluence`, `water` as logs;
        `psf_fwhm` and `background_scale` as logs, for `loss_and_gradient`)."""
    def with_vector(self, names: Sequence[str], x: npt.ArrayLike) -> "Simulator": ...
    def loss_and_gradient(
        self,
        observed: npt.ArrayLike,
        loss: str = "poisson",
        mask: Optional[npt.ArrayLike] = None,
        parameters: Optional[Sequence[str]] = None,
        x: Optional[npt.ArrayLike] = None,
        engine: Optional[str] = None,
        precision: Optional[str] = None,
        background: Optional[npt.ArrayLike] = None,
    ) -> Tuple[float, FloatArray]:
        """`(f, g)` for `scipy.optimize.minimize(jac=True)`: 'poisson' or 'least_squares' loss
        of the image at `x` (flags' units) against `observed` (photons per pixel). The model is
        the image plus `background` × its scale, spread by the flags' PSF; `parameters` may
        include `psf_fwhm` (ln µm) and `background_scale` (ln)."""
    def write_smv(self, path: Path, image: npt.ArrayLike) -> float:
        """Write as the binary's `-intfile`; returns the scale."""
    def write_cbf(self, path: Path, image: npt.ArrayLike) -> float:
        """Write as the binary's `-cbffile`; returns the scale."""
    def write_nexus(self, path: Path, image: npt.ArrayLike) -> float:
        """Write as the binary's `-nexusfile`; returns the scale."""
    def render_shots(
        self, matrices: npt.ArrayLike, engine: Optional[str] = None, precision: Optional[str] = None
    ) -> ImageArray:
        """One image per MOSFLM A matrix `(n, 3, 3)` (Å⁻¹ times λ in Å): `(n, slow, fast)`."""
