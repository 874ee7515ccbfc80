//! `cutune worker [--device N]`: the child process that owns the CUDA context while tuning.
//! Hidden from `--help`: the tuner starts it and talks to it on stdin/stdout (docs/worker.md).

use std::io::Write as _;
use std::os::fd::FromRawFd as _;

use anyhow::bail;

/// Arguments of `cutune worker`.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The CUDA device to measure on, by ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
}

/// Serves requests until `shutdown` or the end of stdin; fails (non-zero exit) when the CUDA
/// context was lost, after answering the request that lost it.
pub fn run(args: &WorkerArgs) -> anyhow::Result<()> {
    let responses = protocol_output()?;
    crate::gpu::worker::serve(args.device, std::io::stdin().lock(), responses)
}

/// The protocol's own handle on the pipe to the tuner; the process's standard output then goes
/// to its standard error. A kernel's `printf` (which the driver writes to standard output, as
/// cuda-samples' `simplePrintf` and cooperative-groups samples do) would otherwise land in the
/// middle of the responses; on standard error it is logged with the worker's other messages.
fn protocol_output() -> anyhow::Result<std::fs::File> {
    std::io::stdout().flush()?;
    // SAFETY: `dup` of the open standard output returns a new descriptor that nothing else
    // owns, which the `File` takes; `dup2` only points descriptor 1 at standard error.
    unsafe {
        let protocol = libc::dup(libc::STDOUT_FILENO);
        if protocol < 0 {
            bail!("cannot duplicate the worker's standard output: {}", std::io::Error::last_os_error());
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            bail!("cannot send the worker's standard output to its standard error: {}", std::io::Error::last_os_error());
        }
        Ok(std::fs::File::from_raw_fd(protocol))
    }
}
