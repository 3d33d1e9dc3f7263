//! NeXus `depends_on` transformation chains (detector), and a small evaluator.
use super::frame::{self, LabToNexus};
use super::{NxDetector, Vec3};

/// Where the detector's transformations live in the file.
pub const DET_TRANSFORMS: &str = "/entry/instrument/detector/transformations";
/// The detector module group.
pub const MODULE: &str = "/entry/instrument/detector/module";

/// Kind of an NXtransformations axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Value in metres.
    Translation,
    /// Value in degrees, right-handed about `vector`.
    Rotation,
}

/// One transformation dataset: its absolute path, kind, unit vector (NeXus
/// frame), value (m or deg), offset (m) and absolute `depends_on` (or ".").
#[derive(Clone, Debug)]
pub struct Transformation {
    pub path: String,
    pub kind: Kind,
    pub vector: Vec3,
    pub value: f64,
    pub offset: Vec3,
    pub depends_on: String,
}

impl Transformation {
    fn new(path: String, kind: Kind, vector: Vec3, value: f64, depends_on: String) -> Self {
        Transformation {
            path,
            kind,
            vector,
            value,
            offset: [0.0; 3],
            depends_on,
        }
    }

    /// NeXus `units` attribute for this axis.
    pub fn units(&self) -> &'static str {
        match self.kind {
            Kind::Translation => "m",
            Kind::Rotation => "deg",
        }
    }

    /// Apply to a point p: rotation R·p + offset, or p + value·vector + offset (m).
    pub fn apply(&self, p: Vec3) -> Vec3 {
        let q = match self.kind {
            Kind::Rotation => frame::rotate_axis(p, self.vector, self.value.to_radians()),
            Kind::Translation => frame::add(p, frame::scale(self.vector, self.value)),
        };
        frame::add(q, self.offset)
    }
}

/// Unit vector and length of `v`; a zero vector gives ((0,0,1), 0).
fn vec_and_len(v: Vec3) -> (Vec3, f64) {
    match frame::unit(v) {
        Some(u) => (u, frame::norm(v)),
        None => ([0.0, 0.0, 1.0], 0.0),
    }
}

/// The unrotated (before rotx/y/z and 2θ) lab position of pix0 (m).
pub fn unrotated_pix0(d: &NxDetector, axis: Vec3) -> Vec3 {
    let p = frame::rotate_axis(d.pix0, axis, -d.twotheta);
    frame::unrotate_xyz(p, d.rotx, d.roty, d.rotz)
}

/// The group of module `k` of a detector of `modules`: [`MODULE`] for a single one, else
/// `module_K` with K zero-padded to a common width (so readers that list groups by name meet
/// them in order).
pub fn module_path(k: usize, modules: usize) -> String {
    match modules {
        0 | 1 => MODULE.to_string(),
        n => format!("{MODULE}_{k:0width$}", width = (n - 1).to_string().len()),
    }
}

/// Build the detector chain, innermost first: fast, slow, module_offset,
/// rot_x, rot_y, rot_z, two_theta. All vectors are R·(lab).
pub fn detector_chain(d: &NxDetector, r: &LabToNexus) -> Result<Vec<Transformation>, String> {
    detector_chain_at(d, r, MODULE)
}

/// [`detector_chain`] with the module's three transformations in the group `module`.
pub fn detector_chain_at(d: &NxDetector, r: &LabToNexus, module: &str) -> Result<Vec<Transformation>, String> {
    let tt_axis = frame::unit(d.twotheta_axis).ok_or("twotheta_axis is a zero vector")?;
    let t = |n: &str| format!("{DET_TRANSFORMS}/{n}");
    let m = |n: &str| format!("{module}/{n}");
    let rot = |name: &str, lab: Vec3, rad: f64, dep: String| {
        Transformation::new(t(name), Kind::Rotation, r.apply(lab), rad.to_degrees(), dep)
    };
    let (off_vec, off_len) = vec_and_len(r.apply(unrotated_pix0(d, tt_axis)));
    let fast = frame::unit(d.fdet0).ok_or("fdet0 is a zero vector")?;
    let slow = frame::unit(d.sdet0).ok_or("sdet0 is a zero vector")?;
    Ok(vec![
        Transformation::new(
            m("fast_pixel_direction"),
            Kind::Translation,
            r.apply(fast),
            d.pixel_size,
            m("module_offset"),
        ),
        Transformation::new(
            m("slow_pixel_direction"),
            Kind::Translation,
            r.apply(slow),
            d.pixel_size,
            m("module_offset"),
        ),
        Transformation::new(m("module_offset"), Kind::Translation, off_vec, off_len, t("rot_x")),
        rot("rot_x", [1.0, 0.0, 0.0], d.rotx, t("rot_y")),
        rot("rot_y", [0.0, 1.0, 0.0], d.roty, t("rot_z")),
        rot("rot_z", [0.0, 0.0, 1.0], d.rotz, t("two_theta")),
        rot("two_theta", tt_axis, d.twotheta, ".".to_string()),
    ])
}

/// Apply the chain that starts at `start` to the point `p`: the named
/// transformation first, then each `depends_on` in turn until ".".
pub fn apply_from(chain: &[Transformation], start: &str, mut p: Vec3) -> Result<Vec3, String> {
    let mut name = start.to_string();
    for _ in 0..=chain.len() {
        if name == "." {
            return Ok(p);
        }
        let t = chain
            .iter()
            .find(|t| t.path == name)
            .ok_or(format!("no transformation {name}"))?;
        p = t.apply(p);
        name = t.depends_on.clone();
    }
    Err(format!("depends_on cycle from {start}"))
}

/// NeXus-frame position (m) of the centre of pixel (i fast, j slow):
/// module_offset chain applied to (i+0.5)·fast + (j+0.5)·slow steps.
pub fn pixel_centre(chain: &[Transformation], i: usize, j: usize) -> Result<Vec3, String> {
    let get = |n: &str| chain.iter().find(|t| t.path.ends_with(n)).ok_or(format!("missing {n}"));
    let (f, s) = (get("/fast_pixel_direction")?, get("/slow_pixel_direction")?);
    if f.depends_on != s.depends_on {
        return Err("fast and slow pixel directions depend on different axes".into());
    }
    let local = frame::add(
        frame::scale(f.vector, f.value * (i as f64 + 0.5)),
        frame::scale(s.vector, s.value * (j as f64 + 0.5)),
    );
    apply_from(chain, &f.depends_on, local)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::io::nexus::frame::{add, rotate_axis, rotate_xyz, scale};

    /// A detector with the given basis; pix0 rotated like nanoBragg.
    pub fn detector(f: Vec3, s: Vec3, o: Vec3, rot: Vec3, tt: f64, tt_axis: Vec3) -> NxDetector {
        let (px, dist, fb, sb) = (1e-4, 0.1, 0.0123, 0.0234);
        let unrot = add(add(scale(o, dist), scale(f, -fb)), scale(s, -sb));
        let pix0 = rotate_axis(rotate_xyz(unrot, rot[0], rot[1], rot[2]), tt_axis, tt);
        NxDetector {
            fpixels: 7,
            spixels: 5,
            pixel_size: px,
            fdet0: f,
            sdet0: s,
            odet0: o,
            rotx: rot[0],
            roty: rot[1],
            rotz: rot[2],
            twotheta: tt,
            twotheta_axis: tt_axis,
            pix0,
            sensor_thickness: 3.2e-4,
            sensor_material: "Si".into(),
            distance: dist,
            beam_center_fast: fb,
            beam_center_slow: sb,
        }
    }

    /// The render's pixel centre, lab frame.
    pub fn render_centre(d: &NxDetector, i: usize, j: usize) -> Vec3 {
        let rot = |v: Vec3| rotate_axis(rotate_xyz(v, d.rotx, d.roty, d.rotz), d.twotheta_axis, d.twotheta);
        let (f, s) = (rot(d.fdet0), rot(d.sdet0));
        let p = add(d.pix0, scale(f, (i as f64 + 0.5) * d.pixel_size));
        add(p, scale(s, (j as f64 + 0.5) * d.pixel_size))
    }

    /// (name, detector, beam) for the five geometry cases.
    pub fn cases() -> Vec<(&'static str, NxDetector, Vec3)> {
        let (x, y, z) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]);
        let mosflm = |rot, tt| detector(z, [0.0, -1.0, 0.0], x, rot, tt, [0.0, 0.0, -1.0]);
        vec![
            ("mosflm", mosflm([0.0; 3], 0.0), x),
            ("xds", detector(x, y, z, [0.0; 3], 0.0, x), z),
            ("dials_2theta", detector(x, y, z, [0.0; 3], 0.3, y), z),
            ("mosflm_rot", mosflm([0.05, -0.1, 0.2], 0.0), x),
            ("mosflm_rot_2theta", mosflm([0.05, -0.1, 0.2], 0.3), x),
        ]
    }

    #[test]
    fn chain_reproduces_render_pixel_centres() {
        for (name, d, beam) in cases() {
            let r = LabToNexus::from_beam(beam).unwrap();
            let chain = detector_chain(&d, &r).unwrap();
            for (i, j) in [(0, 0), (6, 0), (0, 4), (6, 4), (3, 2)] {
                let got = pixel_centre(&chain, i, j).unwrap();
                let want = r.apply(render_centre(&d, i, j));
                for k in 0..3 {
                    assert!(
                        (got[k] - want[k]).abs() < 1e-12,
                        "{name} ({i},{j}): {got:?} vs {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn module_names_sort_in_panel_order() {
        assert_eq!(module_path(0, 1), MODULE);
        let names: Vec<String> = (0..12).map(|k| module_path(k, 12)).collect();
        assert_eq!(names[3], format!("{MODULE}_03"));
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, names);
    }

    #[test]
    fn chain_detects_wrong_order() {
        // Swapping rot_x and rot_z must break the match for a rotated detector.
        let (_, d, beam) = cases().remove(3);
        let r = LabToNexus::from_beam(beam).unwrap();
        let mut chain = detector_chain(&d, &r).unwrap();
        let (vx, ax) = (chain[3].vector, chain[3].value);
        chain[3].vector = chain[5].vector;
        chain[3].value = chain[5].value;
        chain[5].vector = vx;
        chain[5].value = ax;
        let got = pixel_centre(&chain, 0, 0).unwrap();
        let want = r.apply(render_centre(&d, 0, 0));
        assert!((0..3).any(|k| (got[k] - want[k]).abs() > 1e-6));
    }
}
