//! The lines templatize wrote, formatted in the project's own style: where the project has a
//! `.clang-format` and `clang-format` is on the PATH, it formats those lines and no others.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{line_edits, Templatized};

/// Formats some lines of a file's text.
pub trait Formatter {
    /// `text`, the contents of `file`, with the 1-based inclusive line ranges `lines`
    /// formatted; `None` when this file has no style to follow or formatting failed.
    fn format_lines(&self, file: &Path, text: &str, lines: &[(usize, usize)]) -> Option<String>;
}

/// `clang-format` from the PATH, with the `.clang-format` (or `_clang-format`) of the file's
/// folder or the nearest one above it.
pub struct ClangFormat;

impl Formatter for ClangFormat {
    fn format_lines(&self, file: &Path, text: &str, lines: &[(usize, usize)]) -> Option<String> {
        let folder = file.canonicalize().ok()?.parent()?.to_path_buf();
        folder.ancestors().find(|dir| dir.join(".clang-format").is_file() || dir.join("_clang-format").is_file())?;
        let mut child = Command::new("clang-format")
            .arg("--style=file")
            .arg(format!("--assume-filename={}", file.display()))
            .args(lines.iter().map(|(first, last)| format!("--lines={first}:{last}")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut stdin = child.stdin.take()?;
        let input = text.to_string();
        // Written from another thread: a large file would fill the pipe while clang-format waits
        // for us to read its output.
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let output = child.wait_with_output().ok()?;
        writer.join().ok()?.ok()?;
        output.status.success().then(|| String::from_utf8(output.stdout).ok()).flatten()
    }
}

/// Formats the lines of `result` that differ from `original` with `formatter`, and updates its
/// edits. Says whether anything was formatted.
pub fn format_changes(result: &mut Templatized, original: &str, file: &Path, formatter: &dyn Formatter) -> bool {
    let lines = changed_lines(original, &result.text);
    if lines.is_empty() {
        return false;
    }
    let Some(formatted) = formatter.format_lines(file, &result.text, &lines) else { return false };
    if formatted == result.text {
        return false;
    }
    result.edits = line_edits(original, &formatted);
    result.text = formatted;
    true
}

/// The 1-based inclusive line ranges of `new` that are not lines of `old`.
fn changed_lines(old: &str, new: &str) -> Vec<(usize, usize)> {
    similar::TextDiff::from_lines(old, new)
        .ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal && !op.new_range().is_empty())
        .map(|op| (op.new_range().start + 1, op.new_range().end))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upper-cases the lines it is given, to show which they were.
    struct Shouting;

    impl Formatter for Shouting {
        fn format_lines(&self, _: &Path, text: &str, lines: &[(usize, usize)]) -> Option<String> {
            let in_range = |n: usize| lines.iter().any(|(a, b)| (*a..=*b).contains(&n));
            Some(text.split_inclusive('\n').enumerate().map(|(i, l)| if in_range(i + 1) { l.to_uppercase() } else { l.to_string() }).collect())
        }
    }

    #[test]
    fn only_the_lines_templatize_wrote_are_formatted() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nx\ny\nb\nc\nz\n"), vec![(2, 3), (6, 6)]);
        let original = "__global__ void scale(float* x, int n) {\n  int i = blockIdx.x * 256 + threadIdx.x;\n  if (i < n) x[i] *= 2.f;\n}\n\nvoid run(float* x, int n) {\n  scale<<<(n + 255) / 256, 256>>>(x, n);\n}\n";
        let mut result = super::super::templatize(original, "scale", &crate::slice::SliceOptions::default()).unwrap();
        let before = result.text.clone();
        assert!(format_changes(&mut result, original, Path::new("k.cu"), &Shouting));
        assert_eq!(super::super::apply_edits(original, &result.edits).unwrap(), result.text);
        for (line, was) in result.text.lines().zip(before.lines()) {
            let kept = original.lines().any(|l| l == was);
            assert_eq!(line, if kept { was.to_string() } else { was.to_uppercase() }, "{}", result.text);
        }
        assert!(result.text.contains("#IFNDEF SCALE_BLOCK_SIZE"), "{}", result.text);
    }
}
