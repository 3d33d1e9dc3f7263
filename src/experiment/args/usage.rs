//! The `-h` text.

pub(crate) const USAGE: &str = "\
nanobragg: simulate the X-ray diffraction image of a small crystal (nanoBragg-compatible flags)

usage: nanobragg -cell a b c alpha beta gamma | -mat FILE  [-hkl FILE | -default_F F]  [options]

A run needs a cell (-cell or -mat) and structure factors (-hkl, ./Fdump.bin or -default_F).
Units: lengths in mm unless noted, angles in degrees, wavelength in Angstrom.
Later flags override earlier ones and the -img/-mask headers.

Input files and structure factors
  -hkl FILE                 text file of 'h k l F' (also writes ./Fdump.bin); without it,
                            ./Fdump.bin is read if present
  -default_F F              structure factor of reflections missing from the table (0)
  -mat FILE  (-matrix)      MOSFLM-style orientation matrix (reciprocal vectors x lambda)
  -cell a b c al be ga      unit cell (A, deg); missing b, c = a; missing angles = 90
  -misset rx ry rz          crystal misset rotations about x, y, z (deg)
  -misset random            random orientation (seeded by -misset_seed)
  -img FILE                 SMV image whose header seeds the geometry
  -mask FILE                SMV mask: pixels of value 0 are skipped; its header seeds the
                            geometry too (read before -img, so -img's header wins)
  -sourcefile FILE          beam sources, one per line: X Y Z weight lambda(m)
  -stol FILE                an amorphous sample's F against sin(theta)/lambda (1/A): adds
                            its diffuse scattering, as nonbragg renders it (docs/nonbragg.md)
  -4stol FILE, -Q FILE      the same with 4 sin(theta)/lambda or Q = 4 pi sin(theta)/lambda
  -stolout FILE             accepted for compatibility, no effect

Detector size and pixels
  -pixel MM                 pixel size (0.1)
  -detpixels N              pixels along both axes (default from -detsize)
  -detpixels_f N  (-detpixels_x)   pixels along the fast axis
  -detpixels_s N  (-detpixels_y)   pixels along the slow axis
  -detsize MM               detector size, both axes (102.4)
  -detsize_f MM, -detsize_s MM     detector size along fast / slow
  -distance MM              sample to direct-beam spot (100); pivot about the beam spot
  -close_distance MM        sample to detector plane; pivot about the sample
  -point_pixel              solid angle 1/R^2 without obliquity
  -curved_det               spherical detector surface

Detector orientation, conventions, beam centre
  -mosflm | -denzo | -adxv | -xds | -dials   detector convention (default -mosflm)
  -detector_rotx DEG, -detector_roty DEG, -detector_rotz DEG   detector rotations
  -twotheta DEG             detector swing about the two-theta axis (pivot sample)
  -twotheta_axis X Y Z      two-theta axis (custom convention, pivot sample)
  -pivot beam|sample        point kept fixed by detector rotations (custom convention only)
  -fdet_vector X Y Z, -sdet_vector X Y Z, -odet_vector X Y Z
                            detector fast / slow / normal axes (custom convention)
  -beam_vector X Y Z        beam direction (custom convention)
  -polar_vector X Y Z       polarization E-vector (custom convention)
  -spindle_axis X Y Z       rotation axis of phi (custom convention)
  -pix0_vector X Y Z  (-pix0_vector_mm)   accepted; only selects the custom convention
  -Xbeam MM, -Ybeam MM      direct-beam centre (pivot beam)
  -Xclose MM, -Yclose MM    point of the detector nearest the sample (pivot sample)
  -ORGX PX, -ORGY PX        XDS origin in pixels (pivot sample)

Beam
  -lambda A  (-wave, -wavelength)   wavelength (1.0)
  -energy EV                photon energy; wavelength = 12398.42/EV A
  -dispersion PCT           spectral width, percent of lambda (0)
  -dispsteps N              wavelengths across the dispersion (auto)
  -divergence MRAD          horizontal and vertical divergence range
  -hdivrange MRAD, -vdivrange MRAD   divergence ranges (auto)
  -hdivstep MRAD, -vdivstep MRAD     divergence steps (auto)
  -hdivsteps N, -vdivsteps N, -divsteps N   divergence step counts (-divsteps: both)
  -round_div | -square_div  trim the divergence grid to an ellipse (default) or not
  -polar K                  Kahn polarization factor (0); cancels -nopolar
  -nopolar                  polarization factor 1
  -fluence PH/M2            photons per square metre (1.25932e29)
  -flux PH/S                photons per second (overrides -fluence)
  -exposure S               exposure time (1)
  -beamsize MM              beam size (0.1)
  -water UM                 thickness of water giving a background (0)
  -coherent                 accepted for compatibility, no effect

Crystal
  -N n                      unit cells along a, b and c (1)
  -Na n, -Nb n, -Nc n       unit cells along one axis
  -samplesize MM  (-sample_size, -xtalsize, -xtal_size)   crystal size along x, y and z
  -sample_thick MM  (-sample_x, -xtal_thick, -xtal_x)      crystal size along x
  -sample_width MM  (-sample_y, -width, -xtal_width, -xtal_y)   crystal size along y
  -sample_height MM  (-sample_heigh, -sample_z, -height, -heigh, -xtal_height,
                    -xtal_heigh, -xtal_z)                  crystal size along z
  -square_xtal | -round_xtal | -gauss_xtal | -tophat_spots (-binary_spots)
                            spot shape model (default -square_xtal)
  -fudge F                  spot-width factor (1)
  -mosaic DEG  (-mosaici, -mosaicity, -mosaic_spr, -mosaic_spread)   mosaic spread
  -mosaic_dom N  (-mosaic_domains)   number of mosaic domains
  -thick MM  (-thickness)   the -stol sample's thickness along the beam (0.1); it is 0.1 mm
                            across, clipped by the beam
  -density G/CM3  (-sample_den, -sample_density)   the -stol sample's density (1)
  -MW G/MOL  (-molec, -molecular_weight)   its molecular weight (18)
  -molecules N              molecules of it in the beam (overrides -density)

Rotation, sampling, sensor
  -phi DEG                  spindle start angle (0)
  -osc DEG                  oscillation range (auto)
  -phistep DEG, -phisteps N spindle step size / count (auto)
  -dmin A                   skip scattering at resolution finer than this (0 = off)
  -oversample N             sub-pixels per axis (0 or absent = auto)
  -oversample_thick, -oversample_polar, -oversample_omega
                            apply that factor per sub-pixel instead of per pixel
  -roi xmin xmax ymin ymax  render only these pixels (0-based, inclusive; x fast, y slow)
  -interpolate | -nointerpolate   tricubic structure-factor interpolation (auto)
  -detector_abs UM|inf  (-detector_absorb, -detector_absorption)
                            sensor attenuation depth; inf or 0 turns absorption off
  -detector_thick UM        sensor thickness (0)
  -detector_thicksteps N  (-thicksteps)   sensor layers (auto)

Output
  -floatfile FILE  (-floatimage)   raw float32 image (floatimage.bin)
  -intfile FILE  (-intimage)       SMV image without noise (intimage.img)
  -noisefile FILE  (-noiseimage)   SMV image with Poisson noise (noiseimage.img)
  -nonoise                  do not write the noise image
  -pgmfile FILE  (-pgmimage)       8-bit PGM preview (image.pgm)
  -nopgm                    do not write the PGM
  -scale S                  int-image scale (auto: 55000/max)
  -adc COUNTS               offset added to the int and noise images (40)
  -pgmscale S               PGM scale (auto)
  -seed n                   noise seed (default from the clock)
  -mosaic_seed n            mosaic-domain seed (12345678)
  -misset_seed n            seed of -misset random (default from the clock)
  -printout                 print pixel values
  -printout_pixel f s       print only this pixel (fast, slow)
  -trace_pixel s f  (-dump_pixel)   trace the calculation of this pixel (slow, fast)
  -progress | -noprogress   progress meter on (default) or off

Detector model on the noise image (the C suite's noisify; each term off unless given)
  -flicker F                relative rms flicker of the source, per pixel
  -calibration F            relative rms static calibration error of each pixel
  -calib_seed n             seed of the calibration error (noisify's default)
  -readout ADU  (-readout_noise, -readnoise)   Gaussian read-out noise
  -gain ADU                 ADU per photon (1)
  -psf gauss|fiber          point-spread function applied after the Poisson draw
  -psf_fwhm UM  (-psf_size, -psf_width)   its full width at half maximum (46)
  -psf_radius N  (-psf_rad) its rendering radius in pixels (0: automatic)

Port options
  -pngfile FILE             log-scaled 8-bit PNG preview of the float image
  -npyfile FILE             the float image as a NumPy .npy array [slow, fast]
  -cbffile FILE             miniCBF image without noise: the -intfile counts as int32, not
                            clipped at 65535, with a Pilatus header (docs/outputs.md)
  -cbf_noisefile FILE       miniCBF image with Poisson noise: the -noisefile counts (same
                            draw, same -seed) as int32, not clipped at 65535 (written even
                            with -nonoise, which drops only the SMV noise image)
  -nexusfile FILE           NeXus NXmx (HDF5) file: int32 counts (with noise unless
                            -nonoise), the float image and the detector, beam and
                            goniometer as rendered; shot runs write one stack per shard
  -geom FILE                a detector of many panels from a CrystFEL geometry file:
                            -floatfile/-npyfile hold [panels, slow, fast], the other
                            images are written per panel (docs/panels.md)
  -detector_expt FILE       the same from the first detector of a DIALS experiment list
                            (.expt); its wavelength unless -lambda/-energy
  -panel_groups NAME        the groups of panels the panel_* derivatives move: panels
                            (each alone, default), all, a CrystFEL rigid_group_collection,
                            or a DIALS hierarchy level (level1, level2, ...)
  -derivative NAME FILE     ∂(pixel)/∂NAME per pixel as raw f32, in NAME's flag units
                            (repeatable; NAME: distance close_distance Xbeam Ybeam cell_a
                            cell_b cell_c cell_alpha cell_beta cell_gamma misset_x misset_y
                            misset_z phi phistep lambda dispersion Na Nb Nc mosaic
                            detector_rotx detector_roty detector_rotz twotheta polar fluence
                            default_F water; with panels: panel_X panel_Y panel_Z (mm, the
                            file's axes) and panel_rot_O panel_rot_F panel_rot_S (°, each
                            group's own axes))
  -engine cpu|wgpu          compute engine: burn-ndarray on the CPU (default), or burn-wgpu
                            (f32; a GPU through Vulkan, Metal on macOS; llvmpipe without one)
  -gpu N|NAME               the wgpu engine's adapter: its index, or a part of its name
                            (default: the platform's high-performance adapter); a wrong one
                            is an error that lists them
  -fusion on|off            one kernel (wgpu) or native loop (cpu) per image, or the tensor
                            stages op by op (on; env NANOBRAGG_FUSION=0 switches it off)
  -precision f64|f32        floating-point precision (cpu: f64; wgpu: f32 only)
  -memory_mb N              memory budget for intermediates, all threads, MiB (256)
  -nthreads N               threads to keep busy: CPU workers, burn's own parallel work,
                            llvmpipe (default OMP_NUM_THREADS, else RAYON_NUM_THREADS, else
                            every core this process may run on; at most 1024)
  -allow_nonfinite          write the images even when pixels are NaN or infinite (otherwise
                            an error naming the flag behind them, exit 9)
  -h, -help, --help         this text

Many shots (docs/many-shots.md)
  -shots FILE               JSON Lines shot list: each line overrides flags for one shot, keyed by
                            flag name without the dash, in the flag's units, e.g.
                            {\"misset\": [10, 20, 30], \"lambda\": 1.1, \"seed\": 5} or
                            {\"misset\": \"random\", \"mat\": [9 numbers as in a -mat file]};
                            blank lines and lines starting with # are skipped
  -shots_random N           N shots in uniformly random orientations (from -seed and the index)
  -prefix P                 output names P000123.bin, .img, _noise.img, .pgm, .png, .npy (shot_)
  -manifest FILE            manifest of finished shots (P's directory: manifest.jsonl, or
                            manifest.shard-I-of-N.jsonl with -shard)
  -shard I/N                render only the shots whose index is I modulo N; a re-run skips the
                            shots its manifest lists with intact files
  -shot_batch N             render up to N consecutive shots that differ only in orientation and
                            fluence in one batched graph (8; 1 = one shot at a time)
  -shot_writers N           threads writing the finished shots' files (half of -nthreads, at
                            least 2); manifest lines stay in render order
                            (-seed S is the base seed of every shot's noise seed; default 0)
";

#[cfg(test)]
mod tests {
    use super::USAGE;

    /// The words of a usage text: split at white space and at the punctuation around flag
    /// names (`-a, -b`, `(-alias)`, `cpu|wgpu`, `NAME: x y;`).
    fn words(text: &str) -> Vec<&str> {
        text.split(|c: char| c.is_whitespace() || ",()|;:[]{}".contains(c))
            .filter(|w| !w.is_empty())
            .collect()
    }

    #[test]
    fn every_accepted_flag_is_in_the_usage_text() {
        let words = words(USAGE);
        let flags = super::super::flags::FLAGS.iter().map(|(name, _)| *name);
        #[cfg(feature = "app")]
        let flags = flags.chain(crate::experiment::args::flags::SHOT_FLAGS.iter().copied());
        let missing: Vec<&str> = flags.filter(|flag| !words.contains(flag)).collect();
        assert!(missing.is_empty(), "flags missing from -h: {missing:?}");
    }

    #[test]
    fn every_derivative_name_is_in_the_usage_text() {
        let start = USAGE.find("  -derivative NAME FILE").expect("-derivative is listed");
        let end = start + USAGE[start..].find("\n  -engine").expect("-engine follows -derivative");
        let listed = words(&USAGE[start..end]);
        let names = crate::config::components::COMPONENTS.iter().map(|c| c.name);
        let missing: Vec<&str> = names
            .chain(crate::experiment::panels::motion::MOTIONS.iter().map(|m| m.0))
            .filter(|name| !listed.contains(name))
            .collect();
        assert!(missing.is_empty(), "-derivative names missing from -h: {missing:?}");
    }
}
