use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Find, templatize and tune CUDA kernels from the editor.
#[derive(Parser)]
#[command(name = "cutune", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the language server on stdin/stdout.
    Lsp,
    /// Run the Model Context Protocol server on stdin/stdout, for coding agents.
    Mcp,
    /// List the kernels, launch sites, tunable sites and findings of a CUDA file.
    Kernels {
        file: PathBuf,
        /// Print the whole model as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure analysis speed and server memory on generated CUDA files.
    Bench(cutune::cli::bench::BenchArgs),
    /// Compile a kernel's configurations with NVRTC (no GPU needed) and report their resources.
    Check(cutune::cli::check::CheckArgs),
    /// Turn a kernel's execution choices into parameters and write its tuning spec.
    Templatize(cutune::cli::templatize::TemplatizeArgs),
    /// Templatize every kernel under a folder in memory and report how far each gets (spec, compile).
    Survey(cutune::cli::survey::SurveyArgs),
    /// Check tuning specs, and convert them to and from T1 files.
    Spec(cutune::cli::spec::SpecArgs),
    /// Print the device-side code NVRTC needs to compile one kernel, without the host code.
    Slice(cutune::cli::slice::SliceArgs),
    /// Search a kernel's parameters on the GPU (or a replay), checking every candidate against the original.
    Tune(cutune::cli::tune::TuneArgs),
    /// Run another implementation of a kernel (an agent's rewrite) against the original: timed in the same run, verified in five stages.
    Compare(cutune::cli::compare::CompareArgs),
    /// Verify one configuration against the original kernel in five stages (smoke, shapes, numerics, determinism, edges).
    Verify(cutune::cli::verify::VerifyArgs),
    /// Measure the search strategies' sample efficiency on recorded spaces (replays).
    BenchSearch(cutune::cli::search_bench::SearchBenchArgs),
    /// Run a program (or read a PyTorch or Nsight Systems profile) and rank its kernels by share of GPU time; capture their launches.
    Profile(cutune::cli::profile::ProfileArgs),
    /// Write a kernel's latest tuning run as a self-contained HTML page (charts, verification, table).
    Report(cutune::cli::report::ReportArgs),
    /// Check that this machine can compile kernels (NVRTC) and measure them (CUDA driver, GPU).
    Doctor(cutune::cli::doctor::DoctorArgs),
    /// Measure the GPU's speed-of-light ceilings (copy bandwidth, FP32 and FP16 rates), cached per device.
    Ceilings(cutune::cli::ceilings::CeilingsArgs),
    /// The process that owns the CUDA context while tuning; started by the tuner itself.
    #[command(hide = true)]
    Worker(cutune::cli::worker::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lsp => return ExitCode::from(cutune::lsp::run_stdio() as u8),
        Command::Mcp => cutune::mcp::run_stdio(),
        Command::Kernels { file, json } => cutune::cli::kernels(&file, json).map(|out| print!("{out}")),
        Command::Bench(args) => cutune::cli::bench::run(&args),
        Command::Templatize(args) => cutune::cli::templatize::run(&args),
        Command::Check(args) => match cutune::cli::check::run(&args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Command::Spec(args) => match cutune::cli::spec::run(&args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Command::Survey(args) => cutune::cli::survey::run(&args),
        Command::Slice(args) => cutune::cli::slice::run(&args),
        Command::Doctor(args) => cutune::cli::doctor::run(&args),
        Command::Profile(args) => cutune::cli::profile::run(&args),
        Command::Ceilings(args) => cutune::cli::ceilings::run(&args),
        Command::Tune(args) => cutune::cli::tune::run(&args),
        Command::Verify(args) => cutune::cli::verify::run(&args),
        Command::Compare(args) => cutune::cli::compare::run(&args),
        Command::Report(args) => cutune::cli::report::run(&args),
        Command::BenchSearch(args) => cutune::cli::search_bench::run(&args),
        Command::Worker(args) => cutune::cli::worker::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
