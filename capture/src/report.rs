//! What the capture library writes and `cutune profile` reads: one run's kernel times, and
//! launch captures. Both sides use these types, so the format has one definition.
//!
//! A capture file is written as the launch happens, so its buffers stream to disk before its
//! header is known:
//!
//! ```text
//! MAGIC (16 bytes) | version (u32 LE) | blobs ... | header (JSON) | header length (u64 LE)
//! ```
//!
//! Blob ranges in the header count from the end of the version field.

use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The run's profile, one file per process (a program may start others that use CUDA).
pub fn profile_file_name(pid: u32) -> String {
    format!("profile-{pid}.json")
}

pub const CAPTURE_EXTENSION: &str = "cutcap";
const MAGIC: &[u8; 16] = b"cutune capture\n\0";
pub const CAPTURE_VERSION: u32 = 1;
const PREFIX_BYTES: u64 = MAGIC.len() as u64 + 4;
const TRAILER_BYTES: u64 = 8;

/// One process's kernel times and what its captures left behind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunProfile {
    pub pid: u32,
    /// CUPTI's API version, as `cuptiGetVersion` gives it.
    pub cupti_version: u32,
    pub kernels: Vec<KernelActivity>,
    pub memcpy_ns: u64,
    pub memset_ns: u64,
    /// Activity records CUPTI dropped for want of buffer space: times are then too low.
    pub dropped_records: u64,
    /// Capture files written, beside this profile.
    pub captures: Vec<String>,
    /// Launches that matched but could not be captured, each with its reason.
    pub problems: Vec<String>,
}

/// The GPU time of one kernel (by its mangled name) over the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelActivity {
    pub name: String,
    pub launches: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

/// One launch of a kernel: its configuration, every argument's bytes, and for each argument
/// that points into device memory, the memory before and after the kernel ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Capture {
    /// The mangled name, as the driver knows the kernel.
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub params: Vec<CapturedParam>,
    /// Why no buffer bytes were kept (over the size cap), when none were.
    pub buffers_omitted: Option<String>,
    /// Time the capture took: synchronising, copying the buffers out twice and writing them.
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapturedParam {
    /// Offset and size in the kernel's parameter buffer.
    pub offset: u64,
    pub size: u64,
    /// The argument's bytes, in hex.
    pub value: String,
    /// Present when the value is an address inside a device allocation.
    pub buffer: Option<CapturedBuffer>,
}

/// The device memory one pointer argument reaches: from the pointer to its allocation's end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapturedBuffer {
    pub allocation_base: u64,
    pub allocation_bytes: u64,
    /// Bytes from the pointer to the allocation's end.
    pub bytes: u64,
    pub before: Option<BlobRange>,
    pub after: Option<BlobRange>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct BlobRange {
    pub offset: u64,
    pub len: u64,
}

impl CapturedParam {
    /// The argument at `offset` in the parameter buffer, whose bytes are `value`.
    pub fn new(offset: u64, value: &[u8], buffer: Option<CapturedBuffer>) -> CapturedParam {
        CapturedParam { offset, size: value.len() as u64, value: hex::encode(value), buffer }
    }

    pub fn value_bytes(&self) -> Result<Vec<u8>, String> {
        hex::decode(&self.value).map_err(|e| format!("value `{}` is not hex: {e}", self.value))
    }
}

/// Why a capture file cannot be read, with the file named.
#[derive(Debug)]
pub struct CaptureError {
    pub path: PathBuf,
    pub problem: String,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for CaptureError {}

/// Writes a capture file: blobs first, as they come, then the header. Written under a
/// temporary name and renamed by [`CaptureWriter::finish`], so a reader never sees half a file.
pub struct CaptureWriter {
    file: File,
    temporary: PathBuf,
    path: PathBuf,
    written: u64,
}

impl CaptureWriter {
    pub fn create(path: &Path) -> std::io::Result<CaptureWriter> {
        let temporary = path.with_extension("partial");
        let mut file = File::create(&temporary)?;
        file.write_all(MAGIC)?;
        file.write_all(&CAPTURE_VERSION.to_le_bytes())?;
        Ok(CaptureWriter { file, temporary, path: path.to_path_buf(), written: 0 })
    }

    /// Appends bytes to the blob being written; [`CaptureWriter::blob`] names the range.
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Where the next blob will start.
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Writes the header and gives the file its name; on failure, removes it.
    pub fn finish(mut self, capture: &Capture) -> std::io::Result<PathBuf> {
        let written = (|| {
            let header = serde_json::to_vec(capture)?;
            self.file.write_all(&header)?;
            self.file.write_all(&(header.len() as u64).to_le_bytes())?;
            self.file.sync_all()?;
            std::fs::rename(&self.temporary, &self.path)
        })();
        match written {
            Ok(()) => Ok(self.path),
            Err(e) => {
                let _ = std::fs::remove_file(&self.temporary);
                Err(e)
            }
        }
    }

    /// Removes the unfinished file.
    pub fn abandon(self) {
        let _ = std::fs::remove_file(&self.temporary);
    }
}

/// A capture file opened for reading: its header, and its blobs read on demand.
#[derive(Debug)]
pub struct CaptureFile {
    pub path: PathBuf,
    pub capture: Capture,
    blob_bytes: u64,
}

impl CaptureFile {
    pub fn open(path: &Path) -> Result<CaptureFile, CaptureError> {
        let fail = |problem: String| CaptureError { path: path.to_path_buf(), problem };
        let mut file = File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        let len = file.metadata().map_err(|e| fail(format!("cannot read: {e}")))?.len();
        if len < PREFIX_BYTES + TRAILER_BYTES {
            return Err(fail(format!("{len} bytes is too short for a capture file (truncated?)")));
        }
        let mut prefix = [0u8; PREFIX_BYTES as usize];
        file.read_exact(&mut prefix).map_err(|e| fail(format!("cannot read: {e}")))?;
        if &prefix[..MAGIC.len()] != MAGIC {
            return Err(fail("not a cutune capture file (its first bytes are not the capture marker)".into()));
        }
        let version = u32::from_le_bytes(prefix[MAGIC.len()..].try_into().expect("4 bytes"));
        if version != CAPTURE_VERSION {
            return Err(fail(format!("capture format version {version}; this cutune reads version {CAPTURE_VERSION}")));
        }
        let mut trailer = [0u8; TRAILER_BYTES as usize];
        file.seek(SeekFrom::End(-(TRAILER_BYTES as i64))).and_then(|_| file.read_exact(&mut trailer)).map_err(|e| fail(format!("cannot read: {e}")))?;
        let header_len = u64::from_le_bytes(trailer);
        let room = len - PREFIX_BYTES - TRAILER_BYTES;
        if header_len == 0 || header_len > room {
            return Err(fail(format!("header length {header_len} does not fit in the file's {len} bytes (truncated or not finished)")));
        }
        let blob_bytes = room - header_len;
        let mut header = vec![0u8; header_len as usize];
        file.seek(SeekFrom::Start(PREFIX_BYTES + blob_bytes))
            .and_then(|_| file.read_exact(&mut header))
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        let capture: Capture = serde_json::from_slice(&header).map_err(|e| fail(format!("header is not a valid capture: {e}")))?;
        check(&capture, blob_bytes).map_err(fail)?;
        Ok(CaptureFile { path: path.to_path_buf(), capture, blob_bytes })
    }

    pub fn read_blob(&self, range: BlobRange) -> Result<Vec<u8>, CaptureError> {
        let fail = |problem: String| CaptureError { path: self.path.clone(), problem };
        if range.offset + range.len > self.blob_bytes {
            return Err(fail(format!("blob at {} of {} bytes lies past the data", range.offset, range.len)));
        }
        let mut file = File::open(&self.path).map_err(|e| fail(format!("cannot open: {e}")))?;
        let mut bytes = vec![0u8; range.len as usize];
        file.seek(SeekFrom::Start(PREFIX_BYTES + range.offset))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|e| fail(format!("cannot read a blob: {e}")))?;
        Ok(bytes)
    }
}

impl CaptureFile {
    /// Whether two blobs hold the same bytes (a buffer before and after the kernel), read a
    /// piece at a time.
    pub fn blobs_equal(&self, a: BlobRange, b: BlobRange) -> Result<bool, CaptureError> {
        const PIECE: u64 = 16 << 20;
        if a.len != b.len {
            return Ok(false);
        }
        let mut at = 0;
        while at < a.len {
            let len = (a.len - at).min(PIECE);
            let piece = |r: BlobRange| self.read_blob(BlobRange { offset: r.offset + at, len });
            if piece(a)? != piece(b)? {
                return Ok(false);
            }
            at += len;
        }
        Ok(true)
    }

    /// Where a blob starts in the file.
    pub fn file_offset(&self, range: BlobRange) -> u64 {
        PREFIX_BYTES + range.offset
    }
}

/// The header agrees with itself and with the data it describes.
fn check(capture: &Capture, blob_bytes: u64) -> Result<(), String> {
    if capture.kernel.is_empty() {
        return Err("the capture names no kernel".into());
    }
    if capture.grid.contains(&0) || capture.block.contains(&0) {
        return Err(format!("grid {:?} or block {:?} has a zero extent", capture.grid, capture.block));
    }
    let mut end_of_previous = 0;
    for (i, param) in capture.params.iter().enumerate() {
        if param.offset < end_of_previous {
            return Err(format!("argument {i} at offset {} overlaps the one before it", param.offset));
        }
        end_of_previous = param.offset + param.size;
        let bytes = param.value_bytes().map_err(|e| format!("argument {i}: {e}"))?;
        if bytes.len() as u64 != param.size {
            return Err(format!("argument {i}: {} bytes of value for a size of {}", bytes.len(), param.size));
        }
        let Some(buffer) = &param.buffer else { continue };
        for (when, blob) in [("before", buffer.before), ("after", buffer.after)] {
            let Some(blob) = blob else { continue };
            if blob.len != buffer.bytes {
                return Err(format!("argument {i}: {when} holds {} bytes of a {}-byte buffer", blob.len, buffer.bytes));
            }
            if blob.offset.checked_add(blob.len).is_none_or(|end| end > blob_bytes) {
                return Err(format!("argument {i}: its {when} bytes lie past the file's data (truncated?)"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(blob: Option<BlobRange>, after: Option<BlobRange>) -> Capture {
        Capture {
            kernel: "_Z5scalePffi".into(),
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            params: vec![
                CapturedParam {
                    offset: 0,
                    size: 8,
                    value: "0000a00000000000".into(),
                    buffer: Some(CapturedBuffer { allocation_base: 0xa00000, allocation_bytes: 16, bytes: 16, before: blob, after }),
                },
                CapturedParam { offset: 8, size: 4, value: "00000040".into(), buffer: None },
                CapturedParam { offset: 12, size: 4, value: "04000000".into(), buffer: None },
            ],
            buffers_omitted: None,
            seconds: 0.0,
        }
    }

    fn write(dir: &Path, bytes_before: &[u8], bytes_after: &[u8]) -> PathBuf {
        let mut writer = CaptureWriter::create(&dir.join("one.cutcap")).unwrap();
        let before = BlobRange { offset: writer.position(), len: bytes_before.len() as u64 };
        writer.append(bytes_before).unwrap();
        let after = BlobRange { offset: writer.position(), len: bytes_after.len() as u64 };
        writer.append(bytes_after).unwrap();
        writer.finish(&sample(Some(before), Some(after))).unwrap()
    }

    #[test]
    fn a_written_capture_reads_back_with_its_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let path = write(dir, &[1; 16], &[2; 16]);
        assert!(!path.with_extension("partial").exists(), "the temporary file is renamed");
        let file = CaptureFile::open(&path).unwrap();
        assert_eq!(file.capture.params.len(), 3);
        let buffer = file.capture.params[0].buffer.clone().unwrap();
        assert_eq!(file.read_blob(buffer.before.unwrap()).unwrap(), vec![1; 16]);
        assert_eq!(file.read_blob(buffer.after.unwrap()).unwrap(), vec![2; 16]);
        assert_eq!(file.capture.params[1].value_bytes().unwrap(), 2.0f32.to_le_bytes());
    }

    #[test]
    fn truncated_and_foreign_files_are_refused_with_their_reason() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let path = write(dir, &[1; 16], &[2; 16]);
        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.join("cut.cutcap");
        std::fs::write(&cut, &bytes[..bytes.len() - 20]).unwrap();
        let error = CaptureFile::open(&cut).unwrap_err().to_string();
        assert!(error.contains("cut.cutcap") && (error.contains("truncated") || error.contains("not a valid capture")), "{error}");

        let foreign = dir.join("foreign.cutcap");
        std::fs::write(&foreign, b"{\"kernel\": \"x\"} and some more bytes").unwrap();
        let error = CaptureFile::open(&foreign).unwrap_err().to_string();
        assert!(error.contains("not a cutune capture file"), "{error}");

        let short = dir.join("short.cutcap");
        std::fs::write(&short, b"cut").unwrap();
        assert!(CaptureFile::open(&short).unwrap_err().to_string().contains("too short"));
    }

    #[test]
    fn a_header_that_disagrees_with_its_data_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let mut writer = CaptureWriter::create(&dir.join("bad.cutcap")).unwrap();
        writer.append(&[0; 8]).unwrap();
        // Claims 16 bytes of a buffer of which the file holds 8.
        let path = writer.finish(&sample(Some(BlobRange { offset: 0, len: 16 }), None)).unwrap();
        let error = CaptureFile::open(&path).unwrap_err().to_string();
        assert!(error.contains("lie past the file's data"), "{error}");

        let mut bad_value = sample(None, None);
        bad_value.params[1].value = "0000".into();
        let path = CaptureWriter::create(&dir.join("value.cutcap")).unwrap().finish(&bad_value).unwrap();
        let error = CaptureFile::open(&path).unwrap_err().to_string();
        assert!(error.contains("argument 1: 2 bytes of value for a size of 4"), "{error}");
    }
}
