//! Reading one file for a scan: size limit, SHA-256, and the text/binary sniff.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::FileKind;

/// What reading one file produced.
pub(super) struct FileContent {
    pub(super) size: u64,
    pub(super) kind: FileKind,
    pub(super) hash: String,
    /// The text, for [`FileKind::Text`] only.
    pub(super) text: Option<String>,
}

/// Reads `path` unless it is over `max_bytes`. A file over the limit is not read at all: its
/// fingerprint is `large:<size>:<mtime in ns>` instead of a content hash, which still changes
/// whenever the file does in practice, without reading gigabytes on every loop.
pub(super) fn read(path: &Path, max_bytes: u64) -> io::Result<FileContent> {
    let file = File::open(path)?;
    let metadata = file.metadata()?;
    let modified = metadata.modified().ok();
    if metadata.len() > max_bytes {
        return Ok(too_large(metadata.len(), modified));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > max_bytes {
        return Ok(too_large(size, modified));
    }
    let hash = format!("{:x}", Sha256::digest(&bytes));
    let text = if bytes.contains(&0) {
        None
    } else {
        String::from_utf8(bytes).ok()
    };
    let kind = if text.is_some() {
        FileKind::Text
    } else {
        FileKind::Binary
    };
    Ok(FileContent {
        size,
        kind,
        hash,
        text,
    })
}

fn too_large(size: u64, modified: Option<SystemTime>) -> FileContent {
    let mtime_ns = modified
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos());
    FileContent {
        size,
        kind: FileKind::TooLarge,
        hash: format!("large:{size}:{mtime_ns}"),
        text: None,
    }
}
