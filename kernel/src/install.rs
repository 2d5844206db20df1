//! The kernelspec: `dx kernel install [--user | --sys-prefix | --prefix DIR]` writes
//! `kernels/dx/kernel.json` (and a logo) under a Jupyter data directory; `dx kernel uninstall`
//! removes it. The spec runs this very `dx` binary, and asks for interrupts as messages.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

/// The kernel's name in Jupyter (`jupyter kernelspec list`, `--kernel dx`).
const KERNEL_NAME: &str = "dx";

/// Where a kernelspec goes, as `jupyter kernelspec install` names the places.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallLocation {
    /// The user's Jupyter data directory (`$JUPYTER_DATA_DIR` when set).
    User,
    /// The active Python environment (`$VIRTUAL_ENV` or `$CONDA_PREFIX`).
    SysPrefix,
    /// `DIR/share/jupyter`.
    Prefix(PathBuf),
}

impl InstallLocation {
    /// The `kernels/dx` directory of this location.
    pub fn kernel_dir(&self) -> anyhow::Result<PathBuf> {
        let data_dir = match self {
            InstallLocation::User => match std::env::var_os("JUPYTER_DATA_DIR") {
                Some(dir) if !dir.is_empty() => PathBuf::from(dir),
                _ => jupyter_zmq_client::user_data_dir()
                    .context("cannot find the user's Jupyter data directory")?,
            },
            InstallLocation::SysPrefix => {
                let prefix = ["VIRTUAL_ENV", "CONDA_PREFIX"]
                    .iter()
                    .find_map(|var| std::env::var_os(var).filter(|dir| !dir.is_empty()));
                match prefix {
                    Some(prefix) => PathBuf::from(prefix).join("share").join("jupyter"),
                    None => bail!(
                        "--sys-prefix needs an active Python environment ($VIRTUAL_ENV or \
                         $CONDA_PREFIX); use --prefix DIR instead"
                    ),
                }
            }
            InstallLocation::Prefix(prefix) => prefix.join("share").join("jupyter"),
        };
        Ok(data_dir.join("kernels").join(KERNEL_NAME))
    }
}

/// The kernelspec for a `dx` binary at `program`.
fn kernel_json(program: &Path) -> serde_json::Value {
    serde_json::json!({
        "argv": [program.to_string_lossy(), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "dx",
        "language": "dx",
        "interrupt_mode": "message",
        "metadata": {},
    })
}

/// Writes the kernelspec for the running `dx` binary; returns its directory.
pub fn install(location: &InstallLocation) -> anyhow::Result<PathBuf> {
    let program = std::env::current_exe().context("cannot find the dx binary")?;
    let dir = location.kernel_dir()?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let spec = serde_json::to_string_pretty(&kernel_json(&program))?;
    std::fs::write(dir.join("kernel.json"), spec + "\n")
        .with_context(|| format!("cannot write {}", dir.join("kernel.json").display()))?;
    for size in [32, 64] {
        let path = dir.join(format!("logo-{size}x{size}.png"));
        std::fs::write(&path, logo_png(size))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(dir)
}

/// Removes the kernelspec; returns its directory, or `None` if there was none.
pub fn uninstall(location: &InstallLocation) -> anyhow::Result<Option<PathBuf>> {
    let dir = location.kernel_dir()?;
    if !dir.join("kernel.json").exists() {
        return Ok(None);
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    Ok(Some(dir))
}

/// The logo: a function (blue) and its derivative (orange) on white, as `:plotgrad` draws them.
fn logo_png(size: u32) -> Vec<u8> {
    let n = size as usize;
    let mut rgb = vec![255u8; n * n * 3];
    /// A curve of the logo and its colour.
    type Curve = (fn(f64) -> f64, [u8; 3]);
    let curves: [Curve; 2] = [(f64::sin, [31, 119, 180]), (f64::cos, [255, 127, 14])];
    let thickness = (size as f64 / 16.0).max(1.0);
    for (curve, colour) in curves {
        for step in 0..n * 8 {
            let x = step as f64 / (n * 8) as f64;
            let y = 0.5 - 0.4 * curve(x * std::f64::consts::TAU);
            let (cx, cy) = (x * size as f64, y * size as f64);
            let radius = thickness.ceil() as i64;
            for dy in -radius..=radius {
                for dx in -radius..=radius {
                    let (px, py) = (cx as i64 + dx, cy as i64 + dy);
                    let inside = ((dx * dx + dy * dy) as f64).sqrt() <= thickness;
                    if inside && (0..n as i64).contains(&px) && (0..n as i64).contains(&py) {
                        let at = (py as usize * n + px as usize) * 3;
                        rgb[at..at + 3].copy_from_slice(&colour);
                    }
                }
            }
        }
    }
    dx_lang::display::encode_png(&rgb, size, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_runs_this_binary_with_message_interrupts() {
        let spec = kernel_json(Path::new("/opt/dx"));
        assert_eq!(spec["argv"][0], "/opt/dx");
        assert_eq!(spec["argv"][3], "{connection_file}");
        assert_eq!(spec["language"], "dx");
        assert_eq!(spec["interrupt_mode"], "message");
    }

    #[test]
    fn locations() {
        let prefix = InstallLocation::Prefix(PathBuf::from("/tmp/env"));
        assert_eq!(
            prefix
                .kernel_dir()
                .expect("a prefix always has a directory"),
            PathBuf::from("/tmp/env/share/jupyter/kernels/dx")
        );
    }

    #[test]
    fn install_and_uninstall_under_a_prefix() {
        let dir = std::env::temp_dir().join(format!("dx-kernel-install-{}", std::process::id()));
        let location = InstallLocation::Prefix(dir.clone());
        let kernel_dir = install(&location).expect("install under a temporary prefix");
        let spec: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(kernel_dir.join("kernel.json")).expect("kernel.json"),
        )
        .expect("kernel.json is JSON");
        assert_eq!(spec["display_name"], "dx");
        let logo = std::fs::read(kernel_dir.join("logo-64x64.png")).expect("a logo");
        assert_eq!(&logo[1..4], b"PNG");
        assert_eq!(
            uninstall(&location).expect("uninstall"),
            Some(kernel_dir.clone())
        );
        assert!(!kernel_dir.exists());
        assert_eq!(uninstall(&location).expect("uninstall twice"), None);
        let _ = std::fs::remove_dir_all(dir);
    }
}
