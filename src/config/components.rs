//! The one table of parameter components a user can name. `-derivative NAME` and refinement
//! ([`crate::refine::Component::named`]) both read it, so their names, units and scales agree.

use crate::base::error::{Error, Result};
use std::f64::consts::PI;

/// A named component of a parameter tensor, in the unit of its command-line flag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamComponent {
    /// The name users give: the C flag's where there is one (`distance`, `Xbeam`, `lambda`).
    pub name: &'static str,
    /// The [`crate::scene::params::PARAMETERS`] name of the tensor, and the component in it.
    pub param: &'static str,
    pub index: usize,
    /// One flag unit in the parameter's own unit (m, rad, Å for the cell, m⁻² for the fluence):
    /// 1e-3 for a length in mm, π/180 for an angle in degrees.
    pub per_unit: f64,
    /// The flag's unit.
    pub unit: &'static str,
    /// A positive, scale-like quantity (refined as a logarithm).
    pub positive: bool,
}

const DEG: f64 = PI / 180.0;

const fn component(
    name: &'static str,
    param: &'static str,
    index: usize,
    per_unit: f64,
    unit: &'static str,
) -> ParamComponent {
    ParamComponent {
        name,
        param,
        index,
        per_unit,
        unit,
        positive: false,
    }
}

const fn positive(c: ParamComponent) -> ParamComponent {
    ParamComponent { positive: true, ..c }
}

/// Every component a user can name, with its flag's unit.
pub const COMPONENTS: [ParamComponent; 29] = [
    component("distance", "distance", 0, 1e-3, "mm"),
    component("close_distance", "close_distance", 0, 1e-3, "mm"),
    component("Xbeam", "beam_center", 0, 1e-3, "mm"),
    component("Ybeam", "beam_center", 1, 1e-3, "mm"),
    component("cell_a", "cell", 0, 1.0, "Å"),
    component("cell_b", "cell", 1, 1.0, "Å"),
    component("cell_c", "cell", 2, 1.0, "Å"),
    component("cell_alpha", "cell", 3, DEG, "°"),
    component("cell_beta", "cell", 4, DEG, "°"),
    component("cell_gamma", "cell", 5, DEG, "°"),
    component("misset_x", "misset", 0, DEG, "°"),
    component("misset_y", "misset", 1, DEG, "°"),
    component("misset_z", "misset", 2, DEG, "°"),
    component("phi", "phi", 0, DEG, "°"),
    component("phistep", "phi", 1, DEG, "°"),
    component("lambda", "lambda0", 0, 1e-10, "Å"),
    component("dispersion", "dispersion", 0, 1e-2, "%"),
    component("Na", "n_cells", 0, 1.0, "cells"),
    component("Nb", "n_cells", 1, 1.0, "cells"),
    component("Nc", "n_cells", 2, 1.0, "cells"),
    positive(component("mosaic", "mosaic_spread", 0, DEG, "°")),
    component("detector_rotx", "detector_rotation", 0, DEG, "°"),
    component("detector_roty", "detector_rotation", 1, DEG, "°"),
    component("detector_rotz", "detector_rotation", 2, DEG, "°"),
    component("twotheta", "twotheta", 0, DEG, "°"),
    component("polar", "polarization", 0, 1.0, "K"),
    positive(component("fluence", "fluence", 0, 1.0, "photons/m²")),
    component("default_F", "default_f", 0, 1.0, "electrons"),
    positive(component("water", "water_size", 0, 1e-6, "µm")),
];

/// The component called `name`; the error, for `flag`, lists the valid names.
pub fn find(name: &str, flag: &str) -> Result<&'static ParamComponent> {
    COMPONENTS.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = COMPONENTS.iter().map(|c| c.name).collect();
        Error::flag(
            flag,
            format!("unknown parameter '{name}' (one of: {})", names.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::params::PARAMETERS;

    #[test]
    fn names_are_unique_and_name_real_parameters() {
        for (i, c) in COMPONENTS.iter().enumerate() {
            assert!(COMPONENTS[..i].iter().all(|d| d.name != c.name), "{} twice", c.name);
            let p = PARAMETERS.iter().find(|p| p.0 == c.param);
            assert!(
                p.is_some_and(|p| c.index < p.1),
                "{}: no {}[{}]",
                c.name,
                c.param,
                c.index
            );
            assert!(c.per_unit > 0.0);
        }
        assert!(find("nope", "-derivative").is_err());
    }
}
