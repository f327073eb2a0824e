//! Finds the architecture of the GPU this process uses, for compiles of
//! blobs recorded for several architectures: at most once per process and
//! platform, and only when such a blob is planned.
//!
//! AMD: the KFD topology in sysfs (`gfx_target_version` of each node;
//! nodes with 0 are CPUs), the first GPU that `ROCR_VISIBLE_DEVICES` and
//! `HIP_VISIBLE_DEVICES` (or `CUDA_VISIBLE_DEVICES`, which HIP also reads)
//! leave visible; `HSA_OVERRIDE_GFX_VERSION` wins as it does in ROCr.
//! NVIDIA: the compute capability from NVML (`libnvidia-ml.so.1`), or from
//! the driver API (`libcuda.so.1`: `cuInit` creates no context) where NVML
//! cannot say which device CUDA numbers first, both loaded at run time.
//!
//! It must never start a process, create a GPU context, or fail a call:
//! whatever goes wrong means "no device found", and the blob is compiled
//! as recorded.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use once_cell::sync::OnceCell;

use crate::config::DeviceEnv;
use crate::gpu::arch::{Device, DeviceArch, Platform};

/// Where the KFD driver publishes its topology.
pub const KFD_NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

static AMD: OnceCell<Option<(Device, Duration)>> = OnceCell::new();
static NVIDIA: OnceCell<Option<(Device, Duration)>> = OnceCell::new();

/// The device of `platform` this process uses, found on the first call
/// and remembered (found or not) for the process, with what finding it
/// took. `store` (the cache directory's `devices/`) keeps an NVIDIA answer
/// for later processes, keyed by the boot, the driver, its GPUs and the
/// variables choosing one.
pub fn detect(platform: Platform, store: Option<&Path>) -> Option<(Device, Duration)> {
    let cell = match platform {
        Platform::Amd => &AMD,
        Platform::Nvidia => &NVIDIA,
    };
    cell.get_or_init(|| {
        let env = crate::config::device_env();
        let t0 = Instant::now();
        let found = match platform {
            Platform::Amd => amd(Path::new(KFD_NODES), &env),
            Platform::Nvidia => nvidia_kept(&env, store, Path::new(NVIDIA_PROC)),
        };
        let took = t0.elapsed();
        let verbose = crate::config::config().verbose;
        match &found {
            Some(d) => {
                log::info!(
                    "ck-jit: device {} (from {}), found in {:.0} µs",
                    d.arch,
                    d.found_by,
                    took.as_secs_f64() * 1e6
                );
                if verbose {
                    eprintln!(
                        "ck-jit: device {} (from {}), found in {:.0} µs",
                        d.arch,
                        d.found_by,
                        took.as_secs_f64() * 1e6
                    );
                }
            }
            None => {
                log::info!("ck-jit: no {platform:?} device found; compiling recorded targets");
                if verbose {
                    eprintln!(
                        "ck-jit: no {platform:?} device found in {:.0} µs; compiling the \
                         recorded targets",
                        took.as_secs_f64() * 1e6
                    );
                }
            }
        }
        found.map(|d| (d, took))
    })
    .clone()
}

/// Where the NVIDIA kernel driver describes itself and its GPUs.
pub const NVIDIA_PROC: &str = "/proc/driver/nvidia";

/// The NVIDIA device, as an earlier process on this machine found it, or
/// found now and kept. NVML's initialisation takes about 20 ms (22.7 ms on
/// an H100 machine), which every process starting with a cache hit of a
/// blob recorded for several architectures would pay; the answer is kept
/// in `store`, under a key of what could change it without this process
/// noticing: the boot (`/proc/sys/kernel/random/boot_id`), the driver
/// (`/proc/driver/nvidia/version`), the GPUs it drives (the PCI addresses
/// under `/proc/driver/nvidia/gpus`) and the variables choosing one.
pub fn nvidia_kept(env: &DeviceEnv, store: Option<&Path>, proc_dir: &Path) -> Option<Device> {
    // Without the driver's /proc files (a container that does not mount
    // them) there is nothing to key an answer on: ask NVML every time.
    let Some(key) = nvidia_key(env, proc_dir) else {
        return nvidia(env);
    };
    let kept = store.map(|d| d.join(&key));
    if let Some(text) = kept.as_ref().and_then(|p| fs::read_to_string(p).ok()) {
        if let Some((arch, by)) = text.split_once('\t') {
            if let Some(arch @ DeviceArch::Nvidia(_)) = DeviceArch::parse(arch) {
                return Some(Device {
                    arch,
                    found_by: format!("{}, kept from an earlier process", by.trim_end()),
                });
            }
        }
    }
    let found = nvidia(env)?;
    if let Some(p) = &kept {
        crate::object::text::keep_text(p, &format!("{}\t{}\n", found.arch, found.found_by));
    }
    Some(found)
}

/// The key an NVIDIA answer is kept under ([`nvidia_kept`]); `None`
/// without the driver's `/proc` files.
pub fn nvidia_key(env: &DeviceEnv, proc_dir: &Path) -> Option<String> {
    let version = fs::read_to_string(proc_dir.join("version")).ok()?;
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let mut gpus: Vec<String> = fs::read_dir(proc_dir.join("gpus"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    gpus.sort();
    let text = format!(
        "nvidia\0{boot}\0{version}\0{}\0{:?}\0{:?}",
        gpus.join(","),
        env.cuda_visible,
        env.cuda_device_order
    );
    Some(blake3::hash(text.as_bytes()).to_hex()[..32].to_string())
}

/// One GPU node of the KFD topology.
#[derive(Debug, Clone)]
struct KfdGpu {
    node: u32,
    gfx: String,
    unique_id: Option<u64>,
}

/// The AMD device a process would use, read from the KFD topology under
/// `nodes` (the directory of numbered node directories; [`KFD_NODES`] on a
/// real system).
pub fn amd(nodes: &Path, env: &DeviceEnv) -> Option<Device> {
    let mut gpus = kfd_gpus(nodes);
    // ROCr first narrows (and orders) the devices, then HIP picks among
    // what ROCr shows.
    if let Some(list) = &env.rocr_visible {
        gpus = select(&gpus, list, |g| g.unique_id);
    }
    let hip = env.hip_visible.as_ref().or(env.cuda_visible.as_ref());
    if let Some(list) = hip {
        gpus = select(&gpus, list, |g| g.unique_id);
    }
    let first = gpus.first()?;
    if let Some(v) = env.hsa_override_gfx.as_deref().and_then(gfx_from_dotted) {
        return Some(Device {
            arch: DeviceArch::Amd(v),
            found_by: format!(
                "HSA_OVERRIDE_GFX_VERSION over KFD topology node {}",
                first.node
            ),
        });
    }
    Some(Device {
        arch: DeviceArch::Amd(first.gfx.clone()),
        found_by: format!("KFD topology node {}", first.node),
    })
}

/// The GPUs of the topology in node order.
fn kfd_gpus(nodes: &Path) -> Vec<KfdGpu> {
    let Ok(dir) = fs::read_dir(nodes) else {
        return Vec::new();
    };
    let mut numbered: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    numbered.sort_unstable();
    numbered
        .into_iter()
        .filter_map(|node| {
            let text = fs::read_to_string(nodes.join(node.to_string()).join("properties")).ok()?;
            let prop = |name: &str| {
                text.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == name).then(|| v.trim().parse::<u64>().ok())?
                })
            };
            let version = prop("gfx_target_version")?;
            (version != 0).then(|| KfdGpu {
                node,
                gfx: gfx_name(version),
                unique_id: prop("unique_id").filter(|u| *u != 0),
            })
        })
        .collect()
}

/// `gfx_target_version` to a target name: major in decimal, minor and
/// stepping one hex digit each (90402 → gfx942, 90010 → gfx90a, 110000 →
/// gfx1100).
pub fn gfx_name(version: u64) -> String {
    let (major, minor, step) = (version / 10000, version / 100 % 100, version % 100);
    format!("gfx{major}{minor:x}{step:x}")
}

/// `HSA_OVERRIDE_GFX_VERSION` (`9.4.2`, `10.3.0`) to a target name.
fn gfx_from_dotted(v: &str) -> Option<String> {
    let mut parts = v.trim().split('.').map(|p| p.parse::<u64>().ok());
    let (major, minor, step) = (parts.next()??, parts.next()??, parts.next()??);
    (parts.next().is_none() && minor < 16 && step < 16)
        .then(|| gfx_name(major * 10000 + minor * 100 + step))
}

/// The devices a `*_VISIBLE_DEVICES` list keeps, in its order: indices
/// into `all`, or `GPU-<hex>` unique ids; as the runtimes do, the list
/// ends at the first entry that names no device (so `-1` or an empty
/// value hides them all).
fn select<T: Clone>(all: &[T], list: &str, uuid: impl Fn(&T) -> Option<u64>) -> Vec<T> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim) {
        let found = if let Some(hex) = entry
            .strip_prefix("GPU-")
            .or_else(|| entry.strip_prefix("gpu-"))
        {
            u64::from_str_radix(hex, 16)
                .ok()
                .and_then(|id| all.iter().find(|g| uuid(g) == Some(id)))
        } else {
            entry.parse::<usize>().ok().and_then(|i| all.get(i))
        };
        match found {
            Some(g) => out.push(g.clone()),
            None => break,
        }
    }
    out
}

/// Which NVIDIA device CUDA numbers first, by `CUDA_VISIBLE_DEVICES`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CudaFirst {
    /// No device is visible.
    None,
    /// By index in CUDA's order.
    Index(u32),
    /// By UUID (`GPU-...` or `MIG-...`).
    Uuid(String),
}

fn cuda_first(visible: Option<&str>) -> CudaFirst {
    let Some(list) = visible else {
        return CudaFirst::Index(0);
    };
    let first = list.split(',').next().unwrap_or("").trim();
    if first.starts_with("GPU-") || first.starts_with("MIG-") {
        CudaFirst::Uuid(first.to_string())
    } else {
        match first.parse::<u32>() {
            Ok(i) => CudaFirst::Index(i),
            Err(_) => CudaFirst::None,
        }
    }
}

fn nvidia(env: &DeviceEnv) -> Option<Device> {
    let first = cuda_first(env.cuda_visible.as_deref());
    if first == CudaFirst::None {
        return None;
    }
    let pci_order = env
        .cuda_device_order
        .as_deref()
        .is_some_and(|o| o.trim() == "PCI_BUS_ID");
    nvml(&first, pci_order).or_else(driver)
}

type NvmlDevice = *mut c_void;

/// The compute capability through NVML, where NVML can tell which device
/// CUDA numbers first: by UUID; by index when CUDA numbers in PCI order
/// (`CUDA_DEVICE_ORDER=PCI_BUS_ID`, NVML's order); or when every device
/// has the same capability (CUDA's default order puts the fastest first,
/// which NVML does not know). `None` otherwise, and when NVML is missing.
fn nvml(first: &CudaFirst, pci_order: bool) -> Option<Device> {
    // SAFETY: loading NVML runs its initialisers, which only set up the
    // library; it is the vendor's documented way to use it. The library
    // stays loaded for the process (leaked below), so no pointer taken
    // from it outlives it.
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some("libnvidia-ml.so.1"),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .ok()?;
    let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
    // SAFETY: each symbol is declared with NVML's documented signature
    // (nvml.h: all return nvmlReturn_t, an int).
    let (init, shutdown, count, by_index, by_uuid, cc) = unsafe {
        (
            *lib.get::<unsafe extern "C" fn() -> c_int>(b"nvmlInit_v2\0")
                .ok()?,
            *lib.get::<unsafe extern "C" fn() -> c_int>(b"nvmlShutdown\0")
                .ok()?,
            *lib.get::<unsafe extern "C" fn(*mut c_uint) -> c_int>(b"nvmlDeviceGetCount_v2\0")
                .ok()?,
            *lib.get::<unsafe extern "C" fn(c_uint, *mut NvmlDevice) -> c_int>(
                b"nvmlDeviceGetHandleByIndex_v2\0",
            )
            .ok()?,
            *lib.get::<unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> c_int>(
                b"nvmlDeviceGetHandleByUUID\0",
            )
            .ok()?,
            *lib.get::<unsafe extern "C" fn(NvmlDevice, *mut c_int, *mut c_int) -> c_int>(
                b"nvmlDeviceGetCudaComputeCapability\0",
            )
            .ok()?,
        )
    };
    // SAFETY: nvmlInit_v2 takes no arguments; 0 is NVML_SUCCESS.
    if unsafe { init() } != 0 {
        return None;
    }
    let capability = |dev: NvmlDevice| -> Option<u32> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: `dev` is a handle NVML returned; both out-pointers are
        // valid for writes.
        let r = unsafe { cc(dev, &mut major, &mut minor) };
        (r == 0 && major > 0 && minor >= 0).then(|| major as u32 * 10 + minor as u32)
    };
    let handle = |i: u32| -> Option<NvmlDevice> {
        let mut dev: NvmlDevice = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid for writes.
        (unsafe { by_index(i, &mut dev) } == 0).then_some(dev)
    };
    let found = match first {
        CudaFirst::None => None,
        CudaFirst::Uuid(uuid) => CString::new(uuid.as_str()).ok().and_then(|c| {
            let mut dev: NvmlDevice = std::ptr::null_mut();
            // SAFETY: a NUL-terminated string and a valid out-pointer.
            let r = unsafe { by_uuid(c.as_ptr(), &mut dev) };
            (r == 0)
                .then(|| capability(dev))
                .flatten()
                .map(|cc| (cc, format!("NVML device {uuid}")))
        }),
        CudaFirst::Index(i) => {
            let mut n: c_uint = 0;
            // SAFETY: the out-pointer is valid for writes.
            let all: Vec<Option<u32>> = if unsafe { count(&mut n) } == 0 {
                (0..n).map(|d| handle(d).and_then(capability)).collect()
            } else {
                Vec::new()
            };
            let same = all
                .first()
                .copied()
                .flatten()
                .filter(|cc| all.iter().all(|c| *c == Some(*cc)) && (*i as usize) < all.len());
            if pci_order {
                all.get(*i as usize).copied().flatten().map(|cc| {
                    (
                        cc,
                        format!("NVML device {i} (CUDA_DEVICE_ORDER=PCI_BUS_ID)"),
                    )
                })
            } else {
                same.map(|cc| (cc, format!("NVML device {i} (all {n} alike)")))
            }
        }
    };
    // SAFETY: balances the successful nvmlInit_v2 above.
    unsafe { shutdown() };
    found.map(|(cc, found_by)| Device {
        arch: DeviceArch::Nvidia(cc),
        found_by,
    })
}

/// The compute capability of CUDA's device 0 through the driver API,
/// which applies `CUDA_VISIBLE_DEVICES` and CUDA's order itself.
/// `cuInit` loads the driver but creates no context.
fn driver() -> Option<Device> {
    const MAJOR: c_int = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    const MINOR: c_int = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
                             // SAFETY: loading the CUDA driver library runs its initialisers, as
                             // any CUDA program does. It stays loaded for the process (leaked):
                             // after cuInit the driver may have threads running its code.
    let lib = unsafe {
        libloading::os::unix::Library::open(
            Some("libcuda.so.1"),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .ok()?;
    let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
    // SAFETY: signatures as cuda.h declares them (CUresult is an int,
    // CUdevice an int).
    let (init, get, attr) = unsafe {
        (
            *lib.get::<unsafe extern "C" fn(c_uint) -> c_int>(b"cuInit\0")
                .ok()?,
            *lib.get::<unsafe extern "C" fn(*mut c_int, c_int) -> c_int>(b"cuDeviceGet\0")
                .ok()?,
            *lib.get::<unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int>(
                b"cuDeviceGetAttribute\0",
            )
            .ok()?,
        )
    };
    let (mut dev, mut major, mut minor) = (0, 0, 0);
    // SAFETY: cuInit(0) is the documented call (flags must be 0); the
    // out-pointers are valid for writes.
    let ok = unsafe {
        init(0) == 0
            && get(&mut dev, 0) == 0
            && attr(&mut major, MAJOR, dev) == 0
            && attr(&mut minor, MINOR, dev) == 0
    };
    (ok && major > 0 && minor >= 0).then(|| Device {
        arch: DeviceArch::Nvidia(major as u32 * 10 + minor as u32),
        found_by: "CUDA driver device 0".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake topology: a CPU node, then GPUs with these versions and ids.
    fn topology(name: &str, gpus: &[(u64, u64)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ck-jit-kfd-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let node = |n: usize, text: String| {
            let d = dir.join(n.to_string());
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("properties"), text).unwrap();
        };
        node(
            0,
            "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\nunique_id 0\n".into(),
        );
        for (i, (version, id)) in gpus.iter().enumerate() {
            node(
                i + 1,
                format!(
                    "cpu_cores_count 0\nsimd_count 304\ngfx_target_version {version}\n\
                     unique_id {id}\nlocation_id 1024\n"
                ),
            );
        }
        // Not a node: ignored.
        fs::write(dir.join("README"), "x").unwrap();
        dir
    }

    /// An NVIDIA answer kept by an earlier process is used without NVML
    /// while the driver, its GPUs and the choosing variables are those it
    /// was kept for; any of them changed, it is not.
    #[test]
    fn a_kept_nvidia_answer_is_used_only_for_the_same_driver_gpus_and_variables() {
        let dir = std::env::temp_dir().join(format!("ck-jit-nvproc-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let proc_dir = dir.join("proc");
        fs::create_dir_all(proc_dir.join("gpus/0000:19:00.0")).unwrap();
        fs::write(proc_dir.join("version"), "NVRM version: 580.65\n").unwrap();
        let store = dir.join("devices");
        let e = env();
        let key = nvidia_key(&e, &proc_dir).unwrap();
        fs::create_dir_all(&store).unwrap();
        fs::write(store.join(&key), "sm_90\tNVML device 0\n").unwrap();
        let d = nvidia_kept(&e, Some(&store), &proc_dir).unwrap();
        assert_eq!(d.arch, DeviceArch::parse("sm_90").unwrap());
        assert!(
            d.found_by.contains("kept from an earlier process"),
            "{}",
            d.found_by
        );
        // Each change is another key.
        let mut other = e.clone();
        other.cuda_visible = Some("1".into());
        assert_ne!(nvidia_key(&other, &proc_dir).unwrap(), key);
        fs::write(proc_dir.join("version"), "NVRM version: 590.10\n").unwrap();
        assert_ne!(nvidia_key(&e, &proc_dir).unwrap(), key);
        fs::write(proc_dir.join("version"), "NVRM version: 580.65\n").unwrap();
        fs::create_dir_all(proc_dir.join("gpus/0000:1a:00.0")).unwrap();
        assert_ne!(nvidia_key(&e, &proc_dir).unwrap(), key);
        // No driver files: no key.
        assert!(nvidia_key(&e, &dir.join("absent")).is_none());
        let _ = fs::remove_dir_all(&dir);
    }

    fn env() -> DeviceEnv {
        DeviceEnv::default()
    }

    fn arch(d: Option<Device>) -> Option<String> {
        d.map(|d| d.arch.to_string())
    }

    #[test]
    fn gfx_target_versions_name_their_targets() {
        assert_eq!(gfx_name(90402), "gfx942");
        assert_eq!(gfx_name(90010), "gfx90a");
        assert_eq!(gfx_name(90500), "gfx950");
        assert_eq!(gfx_name(110000), "gfx1100");
        assert_eq!(gfx_name(100300), "gfx1030");
        assert_eq!(gfx_from_dotted("10.3.0").as_deref(), Some("gfx1030"));
        assert_eq!(gfx_from_dotted("9.4"), None);
    }

    #[test]
    fn the_first_gpu_node_of_the_topology_is_the_device() {
        let t = topology("first", &[(90010, 0x1111), (90402, 0x2222)]);
        let d = amd(&t, &env()).unwrap();
        assert_eq!(d.arch, DeviceArch::Amd("gfx90a".into()));
        assert_eq!(d.found_by, "KFD topology node 1");
        let _ = fs::remove_dir_all(t);
    }

    #[test]
    fn visible_devices_pick_among_the_gpus() {
        let t = topology(
            "visible",
            &[(90010, 0x1111), (90402, 0x2222), (90500, 0x3333)],
        );
        let with = |hip: Option<&str>, rocr: Option<&str>, cuda: Option<&str>| {
            arch(amd(
                &t,
                &DeviceEnv {
                    hip_visible: hip.map(String::from),
                    rocr_visible: rocr.map(String::from),
                    cuda_visible: cuda.map(String::from),
                    ..env()
                },
            ))
        };
        assert_eq!(with(Some("1"), None, None).as_deref(), Some("gfx942"));
        assert_eq!(with(Some("2,0"), None, None).as_deref(), Some("gfx950"));
        // HIP indexes what ROCr leaves visible.
        assert_eq!(
            with(Some("1"), Some("2,0"), None).as_deref(),
            Some("gfx90a")
        );
        // HIP reads CUDA_VISIBLE_DEVICES when its own is unset.
        assert_eq!(with(None, None, Some("2")).as_deref(), Some("gfx950"));
        assert_eq!(with(Some("0"), None, Some("2")).as_deref(), Some("gfx90a"));
        // Unique ids.
        assert_eq!(
            with(None, Some("GPU-2222"), None).as_deref(),
            Some("gfx942")
        );
        // Nothing visible: no device.
        assert_eq!(with(Some("-1"), None, None), None);
        assert_eq!(with(Some(""), None, None), None);
        assert_eq!(with(Some("7"), None, None), None);
        let _ = fs::remove_dir_all(t);
    }

    #[test]
    fn the_override_names_the_architecture_of_a_present_gpu() {
        let t = topology("override", &[(110000, 1)]);
        let e = DeviceEnv {
            hsa_override_gfx: Some("10.3.0".into()),
            ..env()
        };
        assert_eq!(arch(amd(&t, &e)).as_deref(), Some("gfx1030"));
        let _ = fs::remove_dir_all(t);
        // No GPU at all: the override names nothing.
        let t = topology("override-none", &[]);
        assert_eq!(amd(&t, &e), None);
        let _ = fs::remove_dir_all(t);
    }

    #[test]
    fn no_topology_is_no_device() {
        assert_eq!(amd(Path::new("/nonexistent/ck-jit/kfd"), &env()), None);
    }

    #[test]
    fn cuda_visible_devices_name_the_first_device() {
        assert_eq!(cuda_first(None), CudaFirst::Index(0));
        assert_eq!(cuda_first(Some("2,0")), CudaFirst::Index(2));
        assert_eq!(
            cuda_first(Some("GPU-8a9b,1")),
            CudaFirst::Uuid("GPU-8a9b".into())
        );
        assert_eq!(
            cuda_first(Some("MIG-1234")),
            CudaFirst::Uuid("MIG-1234".into())
        );
        assert_eq!(cuda_first(Some("")), CudaFirst::None);
        assert_eq!(cuda_first(Some("-1")), CudaFirst::None);
    }
}
