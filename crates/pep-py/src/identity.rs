//! Which file holds this code. A sweep keys its records by the simulator
//! build that ran them (`pep_exp::runner::build_identity`), and inside
//! Python the running executable is the interpreter: the module's own
//! file is the build.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// The path of the executable or shared library this function was loaded
/// from, as the dynamic loader knows it; `None` if it cannot tell.
pub fn library_path() -> Option<PathBuf> {
    // SAFETY: dladdr only reads the loader's tables and fills `info`; the
    // name it points to lives as long as the object stays loaded (this
    // code is in it), and is copied out at once.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let here = library_path as *const () as *const libc::c_void;
        if libc::dladdr(here, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = CStr::from_ptr(info.dli_fname).to_bytes();
        (!name.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(name)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_test_binary_is_where_this_code_is() {
        let found = super::library_path().expect("dladdr names the object");
        let found = std::fs::canonicalize(found).unwrap();
        let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(found, exe);
    }
}
