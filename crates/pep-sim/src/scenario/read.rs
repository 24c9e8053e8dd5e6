//! Reading a scenario (or experiment) file: regular files only, and at
//! most [`MAX_TEXT_BYTES`], so `/dev/zero` or a named pipe is refused
//! rather than read forever.

use std::io::{self, Read};
use std::path::Path;

/// Largest scenario or experiment file read: 16 MiB, far beyond any
/// hand-written or generated file.
pub const MAX_TEXT_BYTES: u64 = 16 << 20;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// It exists but is not a regular file: what it is instead.
    NotAFile(&'static str),
    /// It is larger than [`MAX_TEXT_BYTES`].
    TooLarge,
    /// Opening or reading failed, or the text is not UTF-8.
    Io(io::Error),
}

impl ReadError {
    /// `<path>: ...`, naming the file as `what` ("scenario file").
    pub(crate) fn message(&self, path: &Path, what: &str) -> String {
        let p = path.display();
        match self {
            ReadError::NotAFile(kind) => {
                format!("{p}: the {what} must be a regular file, but this is {kind}")
            }
            ReadError::TooLarge => format!("{p}: the {what} is larger than 16 MiB"),
            ReadError::Io(e) => format!("{p}: cannot read the {what}: {e}"),
        }
    }
}

/// What a non-regular file is, in words.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    "not a regular file"
}

pub(crate) fn read_bounded(path: &Path) -> Result<String, ReadError> {
    // Checked before opening: opening a FIFO blocks until a writer comes.
    let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile(kind_of(meta.file_type())));
    }
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > MAX_TEXT_BYTES {
        return Err(ReadError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

/// Reads a text file of at most 16 MiB ([`MAX_TEXT_BYTES`]) that must be
/// a regular file (not a directory, FIFO or device). Errors are one line
/// naming the path and the file as `what`, e.g. `what = "experiment
/// file"`: `x.toml: the experiment file is larger than 16 MiB`.
pub fn read_text(path: &Path, what: &str) -> Result<String, String> {
    read_bounded(path).map_err(|e| e.message(path, what))
}
