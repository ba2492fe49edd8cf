//! Read-only access to a running data plane's pinned maps with the bare
//! bpf(2) syscall (BPF_OBJ_GET, BPF_MAP_LOOKUP_ELEM), for samplers that
//! must be cheaper than a `dataplane stats` process per sample. The value
//! types are the `#[repr(C)]` layouts of `dataplane_common`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{bail, Result};

/// Where `dataplane` pins an instance's maps (`dataplane_user::sys::pin_dir`).
pub const PIN_ROOT: &str = "/sys/fs/bpf/dataplane";

const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_OBJ_GET: libc::c_long = 7;

#[repr(C)]
#[derive(Default)]
struct ObjGet {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
    path_fd: i32,
    _pad: u32,
}

#[repr(C)]
#[derive(Default)]
struct Lookup {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// A pinned array map opened read-only.
pub struct PinnedArray {
    fd: OwnedFd,
}

impl PinnedArray {
    /// Opens `<PIN_ROOT>/<instance>/<map>`.
    pub fn open(instance: &str, map: &str) -> Result<PinnedArray> {
        let path = Path::new(PIN_ROOT).join(instance).join(map);
        let c = std::ffi::CString::new(path.to_string_lossy().as_bytes())?;
        let attr = ObjGet {
            pathname: c.as_ptr() as u64,
            file_flags: 1 << 3,
            ..Default::default()
        }; // BPF_F_RDONLY
           // SAFETY: bpf(2) with an attribute struct of the size given.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_OBJ_GET,
                &attr as *const ObjGet,
                std::mem::size_of::<ObjGet>(),
            )
        };
        if fd < 0 {
            bail!(
                "opening pinned map {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: a new fd owned from here on.
        Ok(PinnedArray {
            fd: unsafe { OwnedFd::from_raw_fd(fd as i32) },
        })
    }

    /// Element `index` as a `T` (the map's value type; its size must match).
    pub fn get<T: Copy>(&self, index: u32) -> Result<T> {
        let mut v = std::mem::MaybeUninit::<T>::zeroed();
        let attr = Lookup {
            map_fd: self.fd.as_raw_fd() as u32,
            key: &index as *const u32 as u64,
            value: v.as_mut_ptr() as u64,
            ..Default::default()
        };
        // SAFETY: bpf(2) writes value_size bytes into v, which is T-sized.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_MAP_LOOKUP_ELEM,
                &attr as *const Lookup,
                std::mem::size_of::<Lookup>(),
            )
        };
        if rc != 0 {
            bail!(
                "map lookup of element {index}: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: the kernel filled it (plain-old-data layouts only).
        Ok(unsafe { v.assume_init() })
    }
}
