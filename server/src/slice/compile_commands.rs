//! Include directories and macro definitions for a file, from the build's `compile_commands.json`.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// The flags of a file's entry in a compilation database that matter to its device slice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileFlags {
    /// The `compile_commands.json` the flags come from.
    pub database: PathBuf,
    /// `-I`, `-isystem` and nvcc's `--include-path`/`--system-include`, made absolute.
    pub include_dirs: Vec<PathBuf>,
    /// `-D NAME[=VALUE]` and nvcc's `--define-macro`, in command-line order.
    pub defines: Vec<(String, Option<String>)>,
}

#[derive(Deserialize)]
struct Entry {
    directory: PathBuf,
    file: PathBuf,
    arguments: Option<Vec<String>>,
    command: Option<String>,
}

/// Finds the compilation database entry for `file`: in the file's folder and each ancestor, a
/// `compile_commands.json` there or in its `build/` folder; the nearest one with an entry wins.
pub fn compile_flags_for(file: &Path) -> Option<CompileFlags> {
    let file = absolute(file);
    let canonical_file = file.canonicalize().unwrap_or_else(|_| file.clone());
    for dir in file.ancestors().skip(1) {
        for database in [dir.join("compile_commands.json"), dir.join("build/compile_commands.json")] {
            let Ok(json) = std::fs::read_to_string(&database) else { continue };
            let Ok(entries) = serde_json::from_str::<Vec<Entry>>(&json) else { continue };
            let entry = entries.into_iter().find(|e| {
                let path = normalize(&e.directory.join(&e.file));
                path == file || path.canonicalize().is_ok_and(|p| p == canonical_file)
            });
            if let Some(entry) = entry {
                return Some(flags_of(entry, database));
            }
        }
    }
    None
}

fn flags_of(entry: Entry, database: PathBuf) -> CompileFlags {
    let words = match (entry.arguments, entry.command) {
        (Some(arguments), _) => arguments,
        (None, Some(command)) => shlex::split(&command).unwrap_or_default(),
        (None, None) => Vec::new(),
    };
    let mut flags = CompileFlags { database, ..CompileFlags::default() };
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let Some((option, attached)) = split_option(&word) else { continue };
        let Some(value) = attached.or_else(|| words.next()) else { break };
        match option {
            Flag::IncludeDir => flags.include_dirs.push(normalize(&entry.directory.join(value))),
            Flag::Define => flags.defines.push(match value.split_once('=') {
                Some((name, body)) => (name.to_string(), Some(body.to_string())),
                None => (value, None),
            }),
        }
    }
    flags
}

#[derive(Clone, Copy)]
enum Flag {
    IncludeDir,
    Define,
}

/// `-Ifoo` → (IncludeDir, Some("foo")); `-I` → (IncludeDir, None): the value is the next word.
fn split_option(word: &str) -> Option<(Flag, Option<String>)> {
    const SPELLINGS: &[(&str, Flag)] = &[
        ("--include-path", Flag::IncludeDir),
        ("--system-include", Flag::IncludeDir),
        ("--define-macro", Flag::Define),
        ("-isystem", Flag::IncludeDir),
        ("-I", Flag::IncludeDir),
        ("-D", Flag::Define),
    ];
    SPELLINGS.iter().find_map(|(spelling, flag)| {
        let rest = word.strip_prefix(spelling)?;
        let value = match rest {
            "" => None,
            _ if spelling.starts_with("--") => Some(rest.strip_prefix('=')?.to_string()),
            _ => Some(rest.to_string()),
        };
        Some((*flag, value))
    })
}

fn absolute(path: &Path) -> PathBuf {
    normalize(&std::env::current_dir().map(|cwd| cwd.join(path)).unwrap_or_else(|_| path.to_path_buf()))
}

/// Removes `.` and `..` without touching the file system (the file may be a symlink target).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(test: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("cutune-slice-{test}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn reads_arguments_of_the_matching_entry_in_a_build_folder_above_the_file() {
        let root = TempDir::new("build_folder");
        let source = root.path().join("src/ops/kernel.cu");
        write(&source, "__global__ void k() {}\n");
        let database = root.path().join("build/compile_commands.json");
        let entries = serde_json::json!([
            {"directory": root.path().join("build"), "file": "../src/other.cu", "arguments": ["nvcc", "-DOTHER"]},
            {"directory": root.path().join("build"), "file": "../src/ops/kernel.cu",
             "arguments": ["nvcc", "-I../include", "-I", "/opt/cccl", "-isystem", "/usr/local/cuda/include",
                           "-DBLOCK=128", "-D", "USE_FAST", "--define-macro=TILE=8", "-o", "kernel.o", "-c", "../src/ops/kernel.cu"]}
        ]);
        write(&database, &entries.to_string());
        let flags = compile_flags_for(&source).expect("the entry is found");
        assert_eq!(flags.database, database);
        assert_eq!(
            flags.include_dirs,
            [root.path().join("include"), PathBuf::from("/opt/cccl"), PathBuf::from("/usr/local/cuda/include")]
        );
        assert_eq!(
            flags.defines,
            [("BLOCK".into(), Some("128".into())), ("USE_FAST".into(), None), ("TILE".into(), Some("8".into()))]
        );
    }

    #[test]
    fn splits_a_command_string_as_a_shell_does() {
        let root = TempDir::new("command_string");
        let source = root.path().join("k.cu");
        write(&source, "");
        let command = format!(r#"nvcc -I"{}/with space" -DNAME="\"quoted\"" -c k.cu"#, root.path().display());
        let entries = serde_json::json!([{"directory": root.path(), "file": source, "command": command}]);
        write(&root.path().join("compile_commands.json"), &entries.to_string());
        let flags = compile_flags_for(&source).expect("the entry is found");
        assert_eq!(flags.include_dirs, [root.path().join("with space")]);
        assert_eq!(flags.defines, [("NAME".into(), Some("\"quoted\"".into()))]);
    }

    #[test]
    fn a_file_without_an_entry_has_no_flags() {
        let root = TempDir::new("no_entry");
        let source = root.path().join("k.cu");
        write(&source, "");
        write(&root.path().join("compile_commands.json"), r#"[{"directory": "/elsewhere", "file": "k.cu", "arguments": []}]"#);
        assert_eq!(compile_flags_for(&source), None);
    }
}
