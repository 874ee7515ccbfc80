//! Finding `libnvrtc` where users have it, and making cudarc use exactly that library.
//!
//! cudarc loads NVRTC lazily, on the first `cudarc::nvrtc::sys` call, by `dlopen`ing a fixed list
//! of bare names (`libnvrtc.so`, `libnvrtc.so.12`, ... see `cudarc::get_lib_name_candidates`),
//! and panics when none loads. It has no way to be given a path. So we `dlopen` the library we
//! chose by its absolute path first, with `RTLD_GLOBAL`: the dynamic loader then answers cudarc's
//! later `dlopen("libnvrtc.so.12")` with the object already loaded, because it matches loaded
//! objects by their soname. `libnvrtc-builtins` is found next to `libnvrtc` through its
//! `RUNPATH` of `$ORIGIN`, so no `LD_LIBRARY_PATH` is needed.
//!
//! That match is by name only, so cudarc can still end up with another copy: its first name,
//! `libnvrtc.so`, is searched on the loader path before the soname is tried. We therefore check
//! that cudarc's binding and ours are the same object (same address of `nvrtcVersion`), and refuse
//! to go on otherwise. A process can only ever use one NVRTC, because cudarc's binding is
//! process-wide and permanent.

use std::ffi::{c_int, c_void, CStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

/// Environment variable naming the NVRTC library (a file) or a directory holding it.
pub const NVRTC_ENV: &str = "CUTUNE_NVRTC";

/// How to get NVRTC, for messages.
pub const INSTALL_HINT: &str = "install it with `pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12` \
(into ./.venv or the active virtual environment), or install a CUDA toolkit and set CUDA_HOME, \
or set CUTUNE_NVRTC to the path of libnvrtc.so";

/// File names of the library, newest first, as found in a toolkit's `lib64/` or on the loader path.
const LIBRARY_NAMES: [&str; 3] = ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"];

/// The header every NVRTC include directory we accept must hold: it is what kernels include most.
const MARKER_HEADER: &str = "cuda_fp16.h";

/// One place looked at, and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Where, e.g. `CUDA_HOME=/opt/cuda: /opt/cuda/lib64/libnvrtc.so`.
    pub place: String,
    /// Why it was not used, e.g. `no such file`.
    pub outcome: String,
}

/// NVRTC could not be found or loaded; says where we looked and how to install it.
#[derive(Debug, Clone)]
pub struct NvrtcNotFound {
    pub attempts: Vec<Attempt>,
}

impl fmt::Display for NvrtcNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "NVRTC (libnvrtc, the CUDA runtime compiler) was not found. Looked at:")?;
        for a in &self.attempts {
            writeln!(f, "  - {}: {}", a.place, a.outcome)?;
        }
        write!(f, "To fix: {INSTALL_HINT}.")
    }
}

impl std::error::Error for NvrtcNotFound {}

/// A loaded NVRTC library that cudarc is bound to.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub library: PathBuf,
    pub include_dir: Option<PathBuf>,
    /// Device libraries' headers outside `include_dir`: the CUDA C++ Core Libraries (`nv/target`,
    /// `cuda/std`, `cub`, which the toolkit's own headers include; a folder of their own in CUDA
    /// 13 and in pip) and cuRAND's device API (its own pip package).
    pub library_include_dirs: Vec<PathBuf>,
    pub version: (i32, i32),
}

/// Serialises discovery: cudarc binds once per process, and two threads racing to preload
/// different copies would make the identity check fail for one of them.
static DISCOVERY: Mutex<()> = Mutex::new(());

/// Finds and loads NVRTC. `explicit` (an editor setting) wins over `CUTUNE_NVRTC`; when either
/// is given, only that place is tried, so that a mistyped path is reported, not silently replaced.
pub(crate) fn locate(explicit: Option<&Path>) -> Result<Located, NvrtcNotFound> {
    let _guard = DISCOVERY.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut attempts = Vec::new();
    let env = std::env::var_os(NVRTC_ENV).filter(|v| !v.is_empty());
    let explicit = match (explicit, &env) {
        (Some(path), _) => Some(("explicit path", path.to_path_buf())),
        (None, Some(value)) => Some((NVRTC_ENV, PathBuf::from(value))),
        (None, None) => None,
    };
    if let Some((origin, path)) = explicit {
        let files = if path.is_dir() { library_files_in(&path) } else { vec![path.clone()] };
        for file in files {
            if let Some(found) = try_file(origin, &file, &mut attempts) {
                return Ok(found);
            }
        }
        if attempts.is_empty() {
            attempts.push(Attempt { place: format!("{origin}: {}", path.display()), outcome: "no libnvrtc.so* in this directory".into() });
        }
        return Err(NvrtcNotFound { attempts });
    }

    for var in ["CUDA_HOME", "CUDA_PATH"] {
        match std::env::var_os(var).filter(|v| !v.is_empty()) {
            Some(root) => {
                let label = format!("{var}={}", Path::new(&root).display());
                if let Some(found) = try_toolkit(&label, Path::new(&root), &mut attempts) {
                    return Ok(found);
                }
            }
            None => attempts.push(Attempt { place: var.into(), outcome: "not set".into() }),
        }
    }
    if let Some(found) = try_toolkit("default toolkit", Path::new("/usr/local/cuda"), &mut attempts) {
        return Ok(found);
    }
    for name in LIBRARY_NAMES {
        if let Some(found) = try_loader_path(name, &mut attempts) {
            return Ok(found);
        }
    }
    for (label, site) in site_packages_dirs(&mut attempts) {
        let lib_dir = site.join("nvidia/cuda_nvrtc/lib");
        let files = library_files_in(&lib_dir);
        if files.is_empty() {
            attempts.push(Attempt { place: format!("{label}: {}", lib_dir.display()), outcome: "no libnvrtc.so.*".into() });
        }
        for file in files {
            if let Some(found) = try_file(&label, &file, &mut attempts) {
                return Ok(found);
            }
        }
    }
    Err(NvrtcNotFound { attempts })
}

fn try_toolkit(label: &str, root: &Path, attempts: &mut Vec<Attempt>) -> Option<Located> {
    for sub in ["lib64", "lib"] {
        let dir = root.join(sub);
        let files = library_files_in(&dir);
        if files.is_empty() {
            attempts.push(Attempt { place: format!("{label}: {}", dir.display()), outcome: "no libnvrtc.so*".into() });
        }
        for file in files {
            if let Some(found) = try_file(label, &file, attempts) {
                return Some(found);
            }
        }
    }
    None
}

/// The NVRTC libraries in `dir`, the unversioned name first, then by descending version.
/// `libnvrtc-builtins` and pip's `libnvrtc.alt.so` variant are not NVRTC's entry library.
fn library_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = name.strip_prefix("libnvrtc.so")?;
            let parts = if version.is_empty() {
                vec![u32::MAX]
            } else {
                version.strip_prefix('.')?.split('.').map(|p| p.parse().ok()).collect::<Option<Vec<u32>>>()?
            };
            Some((parts, e.path()))
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0));
    files.into_iter().map(|(_, path)| path).collect()
}

fn try_file(label: &str, file: &Path, attempts: &mut Vec<Attempt>) -> Option<Located> {
    let place = format!("{label}: {}", file.display());
    if !file.exists() {
        attempts.push(Attempt { place, outcome: "no such file".into() });
        return None;
    }
    // SAFETY: loading NVRTC runs only its initialisers, which have no preconditions.
    match unsafe { Library::open(Some(file), RTLD_NOW | RTLD_GLOBAL) } {
        Ok(library) => bind(place, library, file.to_path_buf(), attempts),
        Err(e) => {
            attempts.push(Attempt { place, outcome: format!("cannot be loaded: {e}") });
            None
        }
    }
}

fn try_loader_path(name: &str, attempts: &mut Vec<Attempt>) -> Option<Located> {
    let place = format!("dynamic loader path: {name}");
    // SAFETY: as in `try_file`.
    match unsafe { Library::open(Some(name), RTLD_NOW | RTLD_GLOBAL) } {
        Ok(library) => match loaded_path(&library) {
            Some(path) => bind(place, library, path, attempts),
            None => {
                attempts.push(Attempt { place, outcome: "loaded, but it has no nvrtcVersion symbol".into() });
                None
            }
        },
        Err(_) => {
            attempts.push(Attempt { place, outcome: "not found".into() });
            None
        }
    }
}

/// The file the loader picked for a library opened by bare name.
fn loaded_path(library: &Library) -> Option<PathBuf> {
    let symbol = version_symbol_address(library)?;
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `symbol` is an address inside a loaded object; dladdr only reads loader tables.
    if unsafe { libc::dladdr(symbol as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated name owned by the loader, valid while loaded.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(std::ffi::OsStr::new(std::str::from_utf8(name.to_bytes()).ok()?));
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

fn version_symbol_address(library: &Library) -> Option<usize> {
    // SAFETY: only the address is read; the symbol is never called through this type.
    unsafe { library.get::<unsafe extern "C" fn()>(b"nvrtcVersion").ok().map(|s| *s as usize) }
}

/// Makes sure cudarc's NVRTC binding is `library`, then keeps `library` loaded for good.
fn bind(place: String, library: Library, path: PathBuf, attempts: &mut Vec<Attempt>) -> Option<Located> {
    let Some(ours) = version_symbol_address(&library) else {
        attempts.push(Attempt { place, outcome: "loaded, but it has no nvrtcVersion symbol: not NVRTC".into() });
        return None;
    };
    // SAFETY: `is_culib_present` only dlopens and closes names; checking it first is what keeps
    // `culib` below from panicking.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        let soname = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        attempts.push(Attempt {
            place,
            outcome: format!(
                "loaded, but cudarc cannot bind it: it opens NVRTC only by the names {:?}, and none of them \
                 resolves to this file ({soname})",
                cudarc::get_lib_name_candidates("nvrtc")
            ),
        });
        return None;
    }
    // SAFETY: a candidate name loads (checked above), so `culib` returns instead of panicking.
    let theirs = unsafe {
        cudarc::nvrtc::sys::culib().get::<unsafe extern "C" fn()>(b"nvrtcVersion").ok().map(|s| *s as usize)
    };
    if theirs != Some(ours) {
        attempts.push(Attempt {
            place,
            outcome: "loaded, but cudarc is bound to another libnvrtc (found by name on the loader path, or \
                      loaded earlier in this process); set CUTUNE_NVRTC to that one, or remove it from the loader path"
                .into(),
        });
        return None;
    }
    let mut major: c_int = 0;
    let mut minor: c_int = 0;
    // SAFETY: cudarc is bound to a loaded NVRTC (checked above); the out-pointers are valid.
    let result = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if result != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        attempts.push(Attempt { place, outcome: format!("nvrtcVersion failed: {result:?}") });
        return None;
    }
    let include_dir = include_dir_for(&path);
    let library_include_dirs = cccl_include_dir_for(&path, include_dir.as_deref())
        .into_iter()
        .chain(pip_include_dir_for(&path, include_dir.as_deref(), "curand", "curand_kernel.h"))
        // `<mma.h>` (tensor cores' WMMA) includes `crt/mma.h`, which pip ships with nvcc.
        .chain(pip_include_dir_for(&path, include_dir.as_deref(), "cuda_nvcc", "crt/mma.h"))
        .collect();
    // cudarc holds its own handle for the life of the process; ours must not unload it either.
    std::mem::forget(library);
    Some(Located { library: path, include_dir, library_include_dirs, version: (major, minor) })
}

/// The CUDA headers matching a library: the toolkit's `include/` beside its `lib64/`, pip's
/// `nvidia/cuda_runtime/include` beside `nvidia/cuda_nvrtc/lib`, then the usual toolkit roots.
fn include_dir_for(library: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    let lib_dir = real.parent()?;
    let mut candidates = vec![lib_dir.join("../include"), lib_dir.join("../../cuda_runtime/include")];
    // A toolkit's lib64 is often a link to targets/<triple>/lib, whose include/ is a sibling too.
    if let Some(parent) = library.parent() {
        candidates.push(parent.join("../include"));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            candidates.push(PathBuf::from(root).join("include"));
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    candidates
        .into_iter()
        .find(|dir| dir.join(MARKER_HEADER).is_file())
        .map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// The folder holding libcu++ (`cuda/std/type_traits`, which `cooperative_groups` and the
/// number-type headers include): the toolkit's `include/cccl` (CUDA 13, whose `include` keeps
/// only `nv/target`), pip's `nvidia/cuda_cccl/include` beside `nvidia/cuda_nvrtc/lib`; `None`
/// when the CUDA headers already hold it (CUDA 12 toolkits) or nothing does.
fn cccl_include_dir_for(library: &Path, include_dir: Option<&Path>) -> Option<PathBuf> {
    const MARKER: &str = "cuda/std/type_traits";
    if include_dir.is_some_and(|d| d.join(MARKER).is_file()) {
        return None;
    }
    let toolkit = include_dir.map(|d| d.join("cccl")).filter(|dir| dir.join(MARKER).is_file()).map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir));
    toolkit.or_else(|| pip_include_dir_for(library, include_dir, "cuda_cccl", MARKER))
}

/// pip's `nvidia/<package>/include` beside `nvidia/cuda_nvrtc/lib`, when it holds `marker` and
/// the CUDA headers do not (a toolkit keeps cuRAND's headers in its own `include`).
fn pip_include_dir_for(library: &Path, include_dir: Option<&Path>, package: &str, marker: &str) -> Option<PathBuf> {
    if include_dir.is_some_and(|d| d.join(marker).is_file()) {
        return None;
    }
    let real = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    let dir = real.parent()?.join("../..").join(package).join("include");
    dir.join(marker).is_file().then(|| std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// The site-packages folders [`locate`] searches, in its order: where pip puts NVIDIA's
/// libraries (NVRTC, CUPTI).
pub fn site_packages() -> Vec<PathBuf> {
    site_packages_dirs(&mut Vec::new()).into_iter().map(|(_, dir)| dir).collect()
}

/// Site-packages directories that may hold pip's `nvidia-cuda-nvrtc-cu12`: the active virtual
/// environment's, the nearest `.venv`'s, then `python3`'s own (user and system site dirs).
fn site_packages_dirs(attempts: &mut Vec<Attempt>) -> Vec<(String, PathBuf)> {
    let mut dirs = Vec::new();
    match std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        Some(venv) => {
            let label = format!("pip in VIRTUAL_ENV={}", Path::new(&venv).display());
            dirs.extend(venv_site_packages(Path::new(&venv)).into_iter().map(|d| (label.clone(), d)));
        }
        None => attempts.push(Attempt { place: "VIRTUAL_ENV".into(), outcome: "not set".into() }),
    }
    // The project's `.venv`, also from a subdirectory (cargo runs tests in the crate's folder).
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match cwd.ancestors().map(|dir| dir.join(".venv")).find(|venv| venv.is_dir()) {
        Some(venv) => {
            let label = format!("pip in {}", venv.display());
            dirs.extend(venv_site_packages(&venv).into_iter().map(|d| (label.clone(), d)));
        }
        None => attempts.push(Attempt {
            place: format!("pip in .venv of {} or a parent", cwd.display()),
            outcome: "no virtual environment".into(),
        }),
    }
    match python_site_dirs() {
        Ok(sites) => dirs.extend(sites.into_iter().map(|d| ("pip for python3".to_string(), d))),
        Err(why) => attempts.push(Attempt { place: "pip for python3".into(), outcome: why }),
    }
    dirs
}

fn venv_site_packages(venv: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn python_site_dirs() -> Result<Vec<PathBuf>, String> {
    const SCRIPT: &str = "import site\nfor d in site.getsitepackages() + [site.getusersitepackages()]: print(d)";
    let output = std::process::Command::new("python3")
        .args(["-c", SCRIPT])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !output.status.success() {
        return Err(format!("python3 could not list its site dirs ({})", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| PathBuf::from(OsString::from(l.trim())))
        .filter(|d| d.is_dir())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{cccl_include_dir_for, pip_include_dir_for};

    /// CUDA 13 keeps `nv/target` in `include` but libcu++ (`cuda/std`) only in `include/cccl`:
    /// the headers `cooperative_groups` needs are found there.
    #[test]
    fn a_cuda_13_toolkit_gets_its_cccl_folder_and_a_cuda_12_one_needs_none() {
        let root = std::env::temp_dir().join(format!("cutune-cccl-{}", std::process::id()));
        let include = root.join("include");
        let library = root.join("lib64/libnvrtc.so");
        for file in [include.join("nv/target"), include.join("cccl/cuda/std/type_traits"), library.clone()] {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "").unwrap();
        }
        let found = cccl_include_dir_for(&library, Some(&include));
        assert_eq!(found, Some(std::fs::canonicalize(include.join("cccl")).unwrap()));

        std::fs::create_dir_all(include.join("cuda/std")).unwrap();
        std::fs::write(include.join("cuda/std/type_traits"), "").unwrap();
        assert_eq!(cccl_include_dir_for(&library, Some(&include)), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// pip puts cuRAND's device headers in a package of their own; a toolkit has them in its
    /// `include`, which needs no other folder.
    #[test]
    fn curand_headers_are_found_in_their_pip_package_unless_the_toolkit_has_them() {
        let root = std::env::temp_dir().join(format!("cutune-curand-{}", std::process::id()));
        let nvidia = root.join("site-packages/nvidia");
        let library = nvidia.join("cuda_nvrtc/lib/libnvrtc.so.12");
        let include = nvidia.join("cuda_runtime/include");
        for file in [library.clone(), include.join("cuda_fp16.h")] {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "").unwrap();
        }
        assert_eq!(pip_include_dir_for(&library, Some(&include), "curand", "curand_kernel.h"), None, "no cuRAND package");

        let curand = nvidia.join("curand/include");
        std::fs::create_dir_all(&curand).unwrap();
        std::fs::write(curand.join("curand_kernel.h"), "").unwrap();
        let found = pip_include_dir_for(&library, Some(&include), "curand", "curand_kernel.h");
        assert_eq!(found, Some(std::fs::canonicalize(&curand).unwrap()));

        std::fs::write(include.join("curand_kernel.h"), "").unwrap();
        assert_eq!(pip_include_dir_for(&library, Some(&include), "curand", "curand_kernel.h"), None, "the toolkit's own");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
