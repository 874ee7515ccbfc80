//! The command line the program is run with, as its project documents it: benchmark suites and
//! research code read their sizes from `argv` (`Nr = atoi(argv[3])`) and ship the run beside
//! the source, in a script (`run`: `./srad 100 0.5 502 458`). The spec describes that run; a
//! program without one is run without arguments, where flags are unset and `argc` is 1.

use std::path::{Path, PathBuf};

use tree_sitter::Node;

use super::host::replace_whole;
use crate::syntax::matching_paren;
use crate::slice::normalize;
use crate::syntax::{eval_constant, identifiers_in};

/// How many folders above the source a script that runs the program is looked for in.
const FOLDERS_UP: usize = 2;
/// Scripts larger than this are not read.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024;
/// Words that run the program named after them (`time ./srad …`).
const WRAPPERS: [&str; 6] = ["time", "nvprof", "cuda-memcheck", "compute-sanitizer", "optirun", "exec"];
/// The C and C++ calls that turn an argument into a number.
const CONVERSIONS: [&str; 16] = ["atoi", "atol", "atoll", "atof", "strtol", "strtoul", "strtoll", "strtoull", "strtod", "strtof", "stoi", "stol", "stoll", "stoul", "stof", "stod"];

/// How a run answers a statement the program makes while it reads its options: in getopt's
/// `case 's':`, or under `strcmp(argv[i], "-s") == 0` in a loop over the arguments.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum OptionInRun {
    /// The run does not give the option, so the statement is not reached.
    Absent,
    /// getopt's `optarg` is this argument (`None` for an option that takes none).
    Getopt(Option<String>),
    /// The loop's index (`i`, `arg.cur`) stands at the option's word, `argv[at]`.
    Indexed { index: String, at: usize },
}

/// The arguments the program is run with, and where that run is written.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct CommandLine {
    /// `argv[1]` onwards.
    pub args: Vec<String>,
    /// The program as the script names it (`./srad`), the script and the line (1-based);
    /// `None` for the run without arguments.
    pub written_in: Option<(String, PathBuf, usize)>,
}

impl CommandLine {
    /// The run the project documents for the program whose source is `source`, else the run
    /// without arguments.
    pub(super) fn of_program(source: &Path) -> CommandLine {
        documented_run(source).unwrap_or_default()
    }

    /// `argc`.
    fn argc(&self) -> i64 {
        self.args.len() as i64 + 1
    }

    /// `condition` decided by this run where it reads the command line (`argc != 5`,
    /// `checkCmdLineFlag(argc, argv, "n")`, `strcmp(argv[1], "r") == 0`); `None` where it reads
    /// something else or nothing of the command line.
    pub(super) fn decide(&self, condition: &str) -> Option<i64> {
        let mut text = condition.to_string();
        // `checkCmdLineFlag(argc, argv, "n")`, and `getCmdLineArgumentString(argc, argv, "n", &v)`,
        // which also says whether the flag is there.
        while let Some(at) = text.find("checkCmdLineFlag").or_else(|| text.find("getCmdLineArgument")) {
            let open = at + text[at..].find('(')?;
            let close = open + matching_paren(&text[open..])?;
            let given = self.flag(quoted(&text[at..=close])?).is_some();
            text.replace_range(at..=close, if given { "1" } else { "0" });
        }
        while let Some(at) = find_call(&text, "strcmp") {
            let open = at + text[at..].find('(')?;
            let close = open + matching_paren(&text[open..])?;
            let (argument, literal) = text[open + 1..close].split_once(',')?;
            let equal = self.argument(argument)? == literal.trim().strip_prefix('"')?.strip_suffix('"')?;
            text.replace_range(at..=close, if equal { "0" } else { "1" });
        }
        let reads = text != condition || identifiers_in(condition).any(|w| w == "argc");
        if !reads || identifiers_in(&text).any(|w| w == "argv") {
            return None;
        }
        eval_constant(&text, &|word| (word == "argc").then(|| self.argc()))
    }

    /// `value` with each number it reads from the command line (`atoi(argv[3])`,
    /// `getCmdLineArgumentInt(argc, argv, "n")`) as this run gives it; `None` where a read has
    /// no number in this run (no such argument, or not a number).
    pub(super) fn read(&self, value: &str) -> Option<String> {
        self.read_with(value, None)
    }

    /// `value`, made where the program reads its options, as this run gives it: getopt's
    /// `optarg` is the option's argument, the loop's index the option's place.
    pub(super) fn read_option(&self, value: &str, option: &OptionInRun) -> Option<String> {
        match option {
            OptionInRun::Absent => None,
            OptionInRun::Getopt(argument) => self.read_with(value, argument.as_deref()),
            OptionInRun::Indexed { index, at } => {
                // `argv[++i]` reads the word after the option, as `argv[i + 1]` does.
                let stepped = replace_whole(&replace_whole(value, &format!("++{index}"), &format!("{index} + 1")), &format!("{index}++"), index);
                self.read(&replace_whole(&stepped, index, &at.to_string()))
            }
        }
    }

    fn read_with(&self, value: &str, optarg: Option<&str>) -> Option<String> {
        let mut text = value.to_string();
        while let Some((at, name)) = CONVERSIONS.iter().find_map(|c| find_call(&text, c).map(|at| (at, *c))) {
            let open = at + text[at..].find('(')?;
            let close = open + matching_paren(&text[open..])?;
            let argument = text[open + 1..close].split(',').next()?;
            let given = match argument.trim() == "optarg" {
                true => optarg?,
                false => self.argument(argument)?,
            };
            let number = number(given, name.ends_with('f') || name.ends_with('d'))?;
            // `std::stoi(…)`: the qualifier goes with the call.
            let start = text[..at].strip_suffix("std::").map_or(at, |s| s.len());
            text.replace_range(start..=close, &number);
        }
        while let Some(at) = text.find("getCmdLineArgumentInt").or_else(|| text.find("getCmdLineArgumentFloat")) {
            let open = at + text[at..].find('(')?;
            let close = open + matching_paren(&text[open..])?;
            let float = text[at..open].ends_with("Float");
            let number = number(self.flag(quoted(&text[at..=close])?)??, float)?;
            text.replace_range(at..=close, &number);
        }
        let unread = identifiers_in(&text).any(|w| w == "argv" || w == "optarg" || w.starts_with("getCmdLineArgument"));
        (!unread).then_some(text)
    }

    /// Where `node` is a statement the program makes while it reads its options, how this run
    /// answers it: the `case` of a `switch` in a loop over `getopt(argc, argv, "s:v")`, or the
    /// branch of `strcmp(argv[i], "-s") == 0` (`!strcmp`) in a loop over the arguments. `None`
    /// for a statement made elsewhere.
    pub(super) fn option_around(&self, text: &str, node: Node, body: Node) -> Option<OptionInRun> {
        // The case's letter; `Some(None)` for `default:`, which no option the run gives reaches
        // (getopt answers `?` for one it does not know).
        let mut letter: Option<Option<char>> = None;
        let mut flag: Option<(String, &str)> = None;
        let mut child = node;
        for ancestor in std::iter::successors(node.parent(), |n| n.parent()).take_while(|n| n.id() != body.id()) {
            match ancestor.kind() {
                "case_statement" if letter.is_none() => letter = Some(ancestor.child_by_field_name("value").and_then(|v| char_literal(&text[v.byte_range()]))),
                "if_statement" if flag.is_none() && ancestor.child_by_field_name("consequence").is_some_and(|c| c.id() == child.id()) => {
                    flag = ancestor.child_by_field_name("condition").and_then(|c| flag_compared(&text[c.byte_range()]));
                }
                "while_statement" | "for_statement" | "do_statement" => {
                    let condition = ancestor.child_by_field_name("condition").map_or("", |c| &text[c.byte_range()]);
                    // getopt in the condition, or first in the body (`while (1) { c = getopt_long(…);
                    // if (c == -1) break; switch (c) … }`, as its manual writes it).
                    let asked = [condition, &text[ancestor.byte_range()]].into_iter().find(|t| getopt_options(t).is_some()).unwrap_or(condition);
                    if let (Some(letter), Some(options)) = (letter, getopt_options(asked)) {
                        let long = long_options(text, asked);
                        return Some(match self.getopt(options, &long).into_iter().rfind(|(given, _)| Some(*given) == letter) {
                            Some((_, argument)) => OptionInRun::Getopt(argument),
                            None => OptionInRun::Absent,
                        });
                    }
                    if let Some((index, word)) = flag.as_ref().filter(|_| identifiers_in(condition).any(|w| w == "argc")) {
                        return Some(match self.args.iter().position(|a| a == word) {
                            Some(at) => OptionInRun::Indexed { index: index.clone(), at: at + 1 },
                            None => OptionInRun::Absent,
                        });
                    }
                }
                _ => {}
            }
            child = ancestor;
        }
        None
    }

    /// The options this run gives as getopt reads them with `options` (`"::vs:i:"`: `s` and `i`
    /// take an argument) and getopt_long with `long` (`--size 256`, `--size=256` for `s`), each
    /// with its argument, in order. Words that are not options are passed over, as GNU getopt
    /// does.
    fn getopt(&self, options: &str, long: &[LongOption]) -> Vec<(char, Option<String>)> {
        let takes_argument = |c: char| options.find(c).is_some_and(|at| options[at + c.len_utf8()..].starts_with(':'));
        let mut given = Vec::new();
        let mut words = self.args.iter();
        while let Some(word) = words.next() {
            if word == "--" {
                break;
            }
            if let Some(named) = word.strip_prefix("--") {
                let (name, attached) = named.split_once('=').map_or((named, None), |(n, v)| (n, Some(v.to_string())));
                if let Some(option) = long.iter().find(|o| o.name == name) {
                    let argument = match option.takes_argument {
                        true => attached.or_else(|| words.next().cloned()),
                        false => None,
                    };
                    given.push((option.letter, argument));
                }
                continue;
            }
            let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) else { continue };
            for (at, c) in letters.char_indices() {
                if !takes_argument(c) {
                    given.push((c, None));
                    continue;
                }
                let attached = &letters[at + c.len_utf8()..];
                let argument = match attached.is_empty() {
                    true => words.next().cloned(),
                    false => Some(attached.to_string()),
                };
                given.push((c, argument));
                break;
            }
        }
        given
    }

    /// `sscanf(argv[2], "%d", &n)`, as the call's arguments: the variable it sets, and the
    /// number this run gives it (`None` where the run has no such argument, or no number there).
    /// `None` for another call.
    pub(super) fn scanned(&self, callee: &str, args: &[String]) -> Option<(String, Option<String>)> {
        let [source, format, target] = args else { return None };
        if callee != "sscanf" || !source.contains("argv") {
            return None;
        }
        let conversion = format.trim().strip_prefix("\"%")?.strip_suffix('"')?.trim_start_matches(['l', 'h', 'z']);
        let float = match conversion {
            "d" | "i" | "u" => false,
            "f" | "g" | "e" => true,
            _ => return None,
        };
        let name = target.trim().strip_prefix('&')?.trim();
        if !crate::syntax::is_identifier(name) {
            return None;
        }
        Some((name.to_string(), self.argument(source).and_then(|a| number(a, float))))
    }

    /// The text of `argv[i]` for an argument written `argv[i]` with a constant `i` (`argv[3 + 1]`).
    fn argument(&self, written: &str) -> Option<&str> {
        let index = written.trim().strip_prefix("argv")?.trim().strip_prefix('[')?.strip_suffix(']')?;
        let index = usize::try_from(eval_constant(index, &|_| None)?).ok()?;
        self.args.get(index.checked_sub(1)?).map(String::as_str)
    }

    /// Whether the flag `-name` (or `--name`) is given, with its value when it has one
    /// (`-n=1024`), as the CUDA samples' helpers read them.
    pub(super) fn flag(&self, name: &str) -> Option<Option<&str>> {
        self.args.iter().find_map(|arg| {
            let bare = arg.trim_start_matches('-');
            (arg.starts_with('-') && bare.split('=').next() == Some(name)).then(|| bare.split_once('=').map(|(_, v)| v))
        })
    }

    /// For a person: `./srad 100 0.5 502 458` (run:1); `None` for the run without arguments.
    pub(super) fn describe(&self) -> Option<String> {
        let (program, script, line) = self.written_in.as_ref()?;
        let script = script.file_name().map_or_else(|| script.display().to_string(), |f| f.to_string_lossy().into_owned());
        Some(format!("`{program} {}` ({script}:{line})", self.args.join(" ")))
    }
}

/// An entry of getopt_long's table: `{"size", required_argument, NULL, 's'}`.
#[derive(Clone, Debug, PartialEq)]
struct LongOption {
    name: String,
    takes_argument: bool,
    letter: char,
}

/// The table of long options the `getopt_long` call of a loop's condition is given
/// (`long_options` of `getopt_long(argc, argv, "s:", long_options, &index)`), as `text`
/// declares it (`static struct option long_options[] = { {"size", 1, NULL, 's'}, … };`).
fn long_options(text: &str, condition: &str) -> Vec<LongOption> {
    let table = ["getopt_long", "getopt_long_only"].iter().find_map(|name| find_call(condition, name)).and_then(|at| {
        let open = at + condition[at..].find('(')?;
        let close = open + matching_paren(&condition[open..])?;
        let name = condition[open + 1..close].split(',').nth(3)?.trim().to_string();
        crate::syntax::is_identifier(&name).then_some(name)
    });
    let Some(table) = table else { return Vec::new() };
    // The declaration `… table[] = { … };`: its entries, one pair of braces each.
    let Some(declared) = text.match_indices(&format!("{table}[]")).find_map(|(at, _)| text[at..].split_once('=').map(|(_, rest)| rest)) else { return Vec::new() };
    let Some(entries) = declared.trim_start().strip_prefix('{').and_then(|inside| inside.split_once("};").map(|(entries, _)| entries)) else { return Vec::new() };
    entries
        .split('{')
        .filter_map(|entry| {
            let fields: Vec<&str> = entry.split('}').next()?.split(',').map(str::trim).collect();
            let [name, has_argument, _, letter] = fields.as_slice() else { return None };
            let name = name.strip_prefix('"')?.strip_suffix('"')?.to_string();
            let takes_argument = matches!(*has_argument, "1" | "2" | "required_argument" | "optional_argument");
            Some(LongOption { name, takes_argument, letter: char_literal(letter)? })
        })
        .collect()
}

/// `'s'` as the character it is.
fn char_literal(text: &str) -> Option<char> {
    let mut chars = text.trim().strip_prefix('\'')?.strip_suffix('\'')?.chars();
    let c = chars.next()?;
    chars.next().is_none().then_some(c)
}

/// The option letters of the `getopt` call (`getopt_long`, `getopt_long_only`) a loop's
/// condition makes: its string literal (`"::vs:i:"`).
fn getopt_options(condition: &str) -> Option<&str> {
    let at = ["getopt", "getopt_long", "getopt_long_only"].iter().find_map(|name| find_call(condition, name))?;
    quoted(&condition[at..])
}

/// The index and the word of a comparison of one argument with a literal that holds when they
/// are equal: `strcmp(argv[i], "-s") == 0`, `!strcmp(argv[i], "-s")`; the index not a number.
fn flag_compared(condition: &str) -> Option<(String, &str)> {
    let condition = condition.trim().trim_start_matches('(').trim_end_matches(')').trim();
    let call = match condition.strip_prefix('!') {
        Some(negated) => negated.trim_start(),
        None => condition.strip_suffix('0')?.trim_end().strip_suffix("==")?.trim_end(),
    };
    let inside = call.strip_prefix("strcmp")?.trim_start().strip_prefix('(')?;
    let (argument, literal) = inside.split_once(',')?;
    let index = argument.trim().strip_prefix("argv")?.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    let word = literal.trim().trim_end_matches(')').trim().strip_prefix('"')?.strip_suffix('"')?;
    (index.parse::<usize>().is_err()).then(|| (index.to_string(), word))
}

/// The string literal of a call's arguments (`"n"` of `checkCmdLineFlag(argc, argv, "n")`).
fn quoted(call: &str) -> Option<&str> {
    let (_, rest) = call.split_once('"')?;
    rest.split_once('"').map(|(inside, _)| inside)
}

/// Where a call of `name` starts in `text`: the name as a word, followed by `(`.
fn find_call(text: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(name) {
        let at = from + found;
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].trim_start();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('(') {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

/// An argument as the conversion reads it, written back as a literal: `502`, or `0.5` for a
/// floating-point one. `None` for text that is not a whole number.
fn number(argument: &str, float: bool) -> Option<String> {
    match float {
        true => argument.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| format!("{v:?}")),
        false => argument.parse::<i64>().ok().map(|v| v.to_string()),
    }
}

/// The first run of the program built from `source` that a script beside it (or a folder or
/// two above) writes.
fn documented_run(source: &Path) -> Option<CommandLine> {
    // A kernel file given on the command line is relative to the working folder.
    let source = std::path::absolute(source).ok()?;
    let folder = source.parent()?;
    let names = program_names(&source);
    let mut runs: Vec<(String, CommandLine)> = Vec::new();
    for dir in folder.ancestors().take(FOLDERS_UP + 1) {
        for script in scripts_in(dir) {
            let Ok(text) = std::fs::read_to_string(&script) else { continue };
            for (line, command) in text.lines().enumerate() {
                let Some((program, args)) = command_words(command) else { continue };
                let path = normalize(&dir.join(&program));
                if path.parent() != Some(&normalize(folder)) {
                    continue;
                }
                let name = path.file_name()?.to_string_lossy().into_owned();
                runs.push((name, CommandLine { args, written_in: Some((program, script.clone(), line + 1)) }));
            }
        }
    }
    // The program of `source` by its name; else the one program the scripts run from its folder.
    if let Some((_, run)) = runs.iter().find(|(name, _)| names.contains(name)) {
        return Some(run.clone());
    }
    let first = runs.first()?;
    runs.iter().all(|(name, _)| *name == first.0).then(|| first.1.clone())
}

/// The names the program built from `source` may have: the file's stem, and the output a build
/// file in its folder names for it (`nvcc … ex_particle.cu -o particlefilter` in a Makefile,
/// `add_executable(particlefilter ex_particle.cu)` in a CMakeLists.txt).
fn program_names(source: &Path) -> Vec<String> {
    let mut names: Vec<String> = source.file_stem().map(|s| s.to_string_lossy().into_owned()).into_iter().collect();
    let (Some(folder), Some(file)) = (source.parent(), source.file_name().and_then(|f| f.to_str())) else { return names };
    let Ok(entries) = std::fs::read_dir(folder) else { return names };
    for entry in entries.flatten() {
        let build_file = entry.file_name().to_string_lossy().into_owned();
        let is_make = matches!(build_file.as_str(), "Makefile" | "makefile" | "GNUmakefile") || build_file.ends_with(".mk");
        if !(is_make || build_file == "CMakeLists.txt") || small_file(&entry.path()).is_none() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        for line in text.lines() {
            let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == '(' || c == ')').filter(|w| !w.is_empty()).collect();
            if !words.iter().any(|w| Path::new(w).file_name().and_then(|f| f.to_str()) == Some(file)) {
                continue;
            }
            let output = match is_make {
                true => words.iter().position(|w| *w == "-o").and_then(|at| words.get(at + 1)),
                false => words.iter().position(|w| *w == "add_executable").and_then(|at| words.get(at + 1)),
            };
            if let Some(name) = output.and_then(|o| Path::new(o).file_name()).and_then(|n| n.to_str()) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// The scripts of `dir` that may run a program: `run` (and `run_…`) without an extension, and
/// shell scripts.
fn scripts_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut scripts: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name.starts_with("run") && p.extension().is_none()) || name.ends_with(".sh")
        })
        .filter(|p| small_file(p).is_some())
        .collect();
    scripts.sort();
    scripts
}

fn small_file(path: &Path) -> Option<()> {
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.len() <= MAX_SCRIPT_BYTES).then_some(())
}

/// The program a shell line runs (a path: `./srad`, `cuda/lud_cuda`) and its arguments, up to
/// a redirection or the end of the command. `None` for comments, shell built-ins and programs
/// found on the `PATH` (`make`, `python`), which are not the project's.
fn command_words(line: &str) -> Option<(String, Vec<String>)> {
    let command = line.split(['#', ';', '|', '&']).next()?.trim();
    let mut words = shell_words(command).into_iter().skip_while(|w| is_assignment(w) || WRAPPERS.contains(&w.as_str()));
    let program = words.next().filter(|p| p.contains('/') && !p.starts_with('$'))?;
    let args = words.take_while(|w| !w.starts_with(['>', '<']) && !w.starts_with("2>") && !w.starts_with("1>")).collect();
    Some((program, args))
}

/// `NAME=value` before a command (`CUDA_VISIBLE_DEVICES=0 ./app`).
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// A shell command's words, with quotes taken off.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> CommandLine {
        CommandLine { args: args.iter().map(|a| a.to_string()).collect(), written_in: None }
    }

    #[test]
    fn conditions_are_decided_by_the_run() {
        let none = CommandLine::default();
        assert_eq!(none.decide(r#"checkCmdLineFlag(argc, (const char **)argv, "dimX")"#), Some(0));
        assert_eq!(none.decide(r#"!checkCmdLineFlag(argc, (const char **)argv, "n")"#), Some(1));
        assert_eq!(none.decide("argc > 2"), Some(0));
        assert_eq!(none.decide(r#"getCmdLineArgumentString(argc, argv, "sims", &value)"#), Some(0));
        assert_eq!(none.decide("argc < 2 && n > 0"), None, "`n` is not the command line's");
        assert_eq!(none.decide("n > 0"), None);
        let srad = run(&["100", "0.5", "502", "458"]);
        assert_eq!(srad.decide("argc != 5"), Some(0));
        assert_eq!(srad.decide("argc == 5"), Some(1));
        let sort = run(&["r"]);
        assert_eq!(sort.decide(r#"strcmp(argv[1], "r") == 0"#), Some(1));
        assert_eq!(sort.decide(r#"strcmp(argv[1],"r")"#), Some(0));
        assert_eq!(sort.decide(r#"strcmp(argv[2], "r") == 0"#), None, "no second argument");
        let flags = run(&["-n=1024", "--verbose"]);
        assert_eq!(flags.decide(r#"checkCmdLineFlag(argc, argv, "n")"#), Some(1));
        assert_eq!(flags.decide(r#"checkCmdLineFlag(argc, argv, "verbose") && argc > 2"#), Some(1));
        assert_eq!(flags.decide(r#"checkCmdLineFlag(argc, argv, "m")"#), Some(0));
    }

    #[test]
    fn numbers_read_from_the_command_line_take_the_run_s_arguments() {
        let srad = run(&["100", "0.5", "502", "458"]);
        assert_eq!(srad.read("atoi(argv[3])").as_deref(), Some("502"));
        assert_eq!(srad.read("atof(argv[2])").as_deref(), Some("0.5"));
        assert_eq!(srad.read("atoi(argv[3]) * atoi( argv[4] )").as_deref(), Some("502 * 458"));
        assert_eq!(srad.read("std::stoi(argv[1])").as_deref(), Some("100"));
        assert_eq!(srad.read("(int)strtol(argv[1], NULL, 10)").as_deref(), Some("(int)100"));
        assert_eq!(srad.read("atoi(argv[2])"), None, "`0.5` is no whole number");
        assert_eq!(srad.read("atoi(argv[5])"), None, "no fifth argument");
        assert_eq!(srad.read("atoi(argv[i])"), None);
        assert_eq!(CommandLine::default().read("atoi(argv[1])"), None);
        let flags = run(&["-n=1024"]);
        assert_eq!(flags.read(r#"getCmdLineArgumentInt(argc, (const char **)argv, "n")"#).as_deref(), Some("1024"));
        assert_eq!(flags.read(r#"getCmdLineArgumentInt(argc, argv, "m")"#), None);
        assert_eq!(srad.read("n * 2").as_deref(), Some("n * 2"), "nothing of the command line");
    }

    #[test]
    fn a_number_scanned_from_an_argument_is_the_run_s() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let particles = run(&["-x", "128", "-np", "1000"]);
        assert_eq!(particles.scanned("sscanf", &args(&["argv[2]", "\"%d\"", "&IszX"])), Some(("IszX".into(), Some("128".into()))));
        assert_eq!(particles.scanned("sscanf", &args(&["argv[4]", "\"%lf\"", "&rate"])), Some(("rate".into(), Some("1000.0".into()))));
        assert_eq!(particles.scanned("sscanf", &args(&["argv[1]", "\"%d\"", "&n"])), Some(("n".into(), None)), "`-x` is no number");
        assert_eq!(particles.scanned("sscanf", &args(&["line", "\"%d\"", "&n"])), None, "not the command line");
        assert_eq!(particles.scanned("sscanf", &args(&["argv[2]", "\"%d %d\"", "&n"])), None);
    }

    #[test]
    fn getopt_reads_the_run_s_options_with_their_arguments() {
        let lud = run(&["-v", "-s", "256", "input.dat", "-qi3"]);
        assert_eq!(lud.getopt("::vs:i:q", &[]), [('v', None), ('s', Some("256".into())), ('q', None), ('i', Some("3".into()))]);
        assert_eq!(lud.getopt("vs:", &[]), [('v', None), ('s', Some("256".into())), ('q', None), ('i', None), ('3', None)], "`i` takes no argument here");
        assert_eq!(run(&["--", "-s", "1"]).getopt("s:", &[]), [], "`--` ends the options");
        assert_eq!(run(&["-s"]).getopt("s:", &[]), [('s', None)], "the argument is missing");
        let table = r#"static struct option long_options[] = {
  /* name, has_arg, flag, val */
  {"input", 1, NULL, 'i'},
  {"size", required_argument, NULL, 's'},
  {"verify", no_argument, NULL, 'v'},
  {0,0,0,0}
};"#;
        let long = long_options(table, "(opt = getopt_long(argc, argv, \"::vs:i:\", long_options, &option_index)) != -1");
        assert_eq!(long.iter().map(|o| (o.name.as_str(), o.takes_argument, o.letter)).collect::<Vec<_>>(), [("input", true, 'i'), ("size", true, 's'), ("verify", false, 'v')]);
        assert_eq!(run(&["--size", "512", "--verify", "--input=a.dat"]).getopt("vs:i:", &long), [('s', Some("512".into())), ('v', None), ('i', Some("a.dat".into()))]);
        assert_eq!(run(&["--size", "1"]).getopt("s:", &[]), [], "a long option no table names");
        assert_eq!(long_options(table, "(opt = getopt(argc, argv, \"s:\")) != -1"), [], "getopt has no table");
    }

    #[test]
    fn comparisons_of_an_argument_with_a_flag_name_the_index_and_the_flag() {
        assert_eq!(flag_compared(r#"strcmp(argv[i], "-boxes1d")==0"#), Some(("i".into(), "-boxes1d")));
        assert_eq!(flag_compared(r#"(!strcmp(argv[args.at], "-n"))"#), Some(("args.at".into(), "-n")));
        assert_eq!(flag_compared(r#"strcmp(argv[1], "-n") == 0"#), None, "a fixed argument is decided as it is");
        assert_eq!(flag_compared(r#"strcmp(argv[i], "-n") != 0"#), None);
        assert_eq!(getopt_options(r#"(opt = getopt_long(argc, argv, "::vs:i:", long_options, &index)) != -1"#), Some("::vs:i:"));
        assert_eq!(getopt_options("i < argc"), None);
        assert_eq!(char_literal("'s'"), Some('s'));
        assert_eq!(char_literal("'ab'"), None);
    }

    #[test]
    fn statements_made_while_reading_options_are_answered_by_the_run() {
        let text = r#"int main(int argc, char **argv) {
    int n = 32, verbose = 0, boxes = 1;
    while ((opt = getopt(argc, argv, "vs:")) != -1) {
        switch (opt) {
        case 's': n = atoi(optarg); break;
        case 'v': verbose = 1; break;
        default: n = 0; break;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-boxes") == 0) { boxes = atoi(argv[++i]); }
    }
}"#;
        let doc = crate::syntax::Document::new(text.to_string());
        let root = doc.tree().unwrap().root_node();
        let body = crate::syntax::descendants(root).find(|n| n.kind() == "compound_statement").unwrap();
        let statement = |start: &str| crate::syntax::descendants(root).find(|n| n.kind() == "assignment_expression" && text[n.byte_range()].starts_with(start)).unwrap();
        let lud = run(&["-s", "256", "6"]);
        let answer = lud.option_around(text, statement("n ="), body).unwrap();
        assert_eq!(answer, OptionInRun::Getopt(Some("256".into())));
        assert_eq!(lud.read_option("atoi(optarg)", &answer).as_deref(), Some("256"));
        assert_eq!(lud.option_around(text, statement("verbose ="), body), Some(OptionInRun::Absent));
        let usage = crate::syntax::descendants(root).find(|n| n.kind() == "assignment_expression" && &text[n.byte_range()] == "n = 0").unwrap();
        assert_eq!(lud.option_around(text, usage, body), Some(OptionInRun::Absent), "`default:` is no option the run gives");
        assert_eq!(lud.option_around(text, statement("boxes ="), body), Some(OptionInRun::Absent));
        let md = run(&["-v", "-boxes", "6"]);
        let boxes = md.option_around(text, statement("boxes ="), body).unwrap();
        assert_eq!(boxes, OptionInRun::Indexed { index: "i".into(), at: 2 });
        assert_eq!(md.read_option("atoi(argv[++i])", &boxes).as_deref(), Some("6"));
        assert_eq!(md.read_option("atoi(argv[i + 1])", &boxes).as_deref(), Some("6"));
        assert_eq!(CommandLine::default().option_around(text, statement("boxes ="), body), Some(OptionInRun::Absent));
        // getopt called first in the loop's body, as getopt_long's manual writes it.
        let manual = r#"int main(int argc, char **argv) {
    int n = 32;
    while (1) {
        int c = getopt(argc, argv, "n:");
        if (c == -1) break;
        switch (c) {
        case 'n': n = atoi(optarg); break;
        }
    }
}"#;
        let doc = crate::syntax::Document::new(manual.to_string());
        let tree_root = doc.tree().unwrap().root_node();
        let manual_body = crate::syntax::descendants(tree_root).find(|n| n.kind() == "compound_statement").unwrap();
        let set = crate::syntax::descendants(tree_root).find(|n| n.kind() == "assignment_expression" && manual[n.byte_range()].starts_with("n =")).unwrap();
        assert_eq!(run(&["-n", "64"]).option_around(manual, set, manual_body), Some(OptionInRun::Getopt(Some("64".into()))));
        let declaration = crate::syntax::descendants(root).find(|n| n.kind() == "init_declarator").unwrap();
        assert_eq!(lud.option_around(text, declaration, body), None, "made before the options are read");
    }

    #[test]
    fn shell_lines_give_the_program_and_its_arguments() {
        assert_eq!(command_words("./srad 100 0.5 502 458"), Some(("./srad".into(), vec!["100".into(), "0.5".into(), "502".into(), "458".into()])));
        assert_eq!(command_words("./pathfinder 100000 100 20 > result.txt"), Some(("./pathfinder".into(), vec!["100000".into(), "100".into(), "20".into()])));
        assert_eq!(command_words("CUDA_VISIBLE_DEVICES=0 time cuda/lud_cuda -s 256 -v"), Some(("cuda/lud_cuda".into(), vec!["-s".into(), "256".into(), "-v".into()])));
        assert_eq!(command_words("./app 'a b' 2>&1"), Some(("./app".into(), vec!["a b".into()])));
        assert_eq!(command_words("# ./srad 1 2"), None);
        assert_eq!(command_words("make all"), None, "a program on the PATH");
        assert_eq!(command_words("$BIN 1 2"), None);
    }

    #[test]
    fn a_run_script_beside_the_program_gives_its_command_line() {
        let dir = std::env::temp_dir().join(format!("cutune-run-{}", std::process::id()));
        let app = dir.join("app");
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(app.join("main.cu"), "int main(int argc, char **argv) {}").unwrap();
        std::fs::write(app.join("run"), "#!/bin/sh\n# the default size\n./scale 4096 256 > out.txt\n./scale 8 8\n").unwrap();
        let run = CommandLine::of_program(&app.join("main.cu"));
        assert_eq!(run.args, ["4096", "256"]);
        assert_eq!(run.written_in, Some(("./scale".to_string(), app.join("run"), 3)));
        assert_eq!(run.describe().as_deref(), Some("`./scale 4096 256` (run:3)"));
        assert_eq!(CommandLine::default().describe(), None);
        // Two programs run from the folder: the one the Makefile builds from the source.
        std::fs::write(app.join("run"), "./other 1\n./scale 2\n").unwrap();
        assert_eq!(CommandLine::of_program(&app.join("main.cu")).args, Vec::<String>::new(), "which program is main.cu's is not said");
        std::fs::write(app.join("Makefile"), "scale: main.cu\n\tnvcc -O3 main.cu -o scale\n").unwrap();
        assert_eq!(CommandLine::of_program(&app.join("main.cu")).args, ["2"]);
        // From the folder above, into this one.
        std::fs::remove_file(app.join("run")).unwrap();
        std::fs::write(dir.join("run.sh"), "cd build\n./app/scale 77\n").unwrap();
        assert_eq!(CommandLine::of_program(&app.join("main.cu")).args, ["77"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
