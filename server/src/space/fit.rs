//! Whether a compiled configuration fits the device, and how many of its blocks an SM holds.

use crate::compile::KernelResources;
use crate::gpu::DeviceInfo;

use super::Infeasible;

/// Resident blocks and warps per SM for one configuration, and what limits them.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Occupancy {
    pub blocks_per_multiprocessor: u32,
    pub warps_per_multiprocessor: u32,
    /// Resident warps over the most an SM holds, 0 to 1.
    pub fraction: f64,
    /// `threads`, `blocks`, `registers` or `shared memory`.
    pub limiter: &'static str,
}

/// Registers are allocated per warp in units of 256 (every architecture since Maxwell).
const REGISTER_ALLOCATION_UNIT: u32 = 256;
/// Shared memory is allocated in 128-byte units, and since Ampere the system reserves 1 KiB of
/// every block's shared memory.
const SHARED_ALLOCATION_UNIT: u64 = 128;
const SHARED_RESERVED_PER_BLOCK: u64 = 1024;

/// Checks a configuration that compiled against the device's limits and computes its occupancy.
/// `shared_bytes` is static plus dynamic shared memory per block.
pub fn fit(device: &DeviceInfo, threads_per_block: u64, resources: &KernelResources, dynamic_shared_bytes: u64) -> Result<Occupancy, Infeasible> {
    let infeasible = |reason: String| Err(Infeasible { reason });
    if threads_per_block == 0 || threads_per_block > device.max_threads_per_block as u64 {
        return infeasible(format!("{threads_per_block} threads per block; {} allows 1 to {}", device.name, device.max_threads_per_block));
    }
    let registers_per_block = resources.registers as u64 * threads_per_block;
    if registers_per_block > device.registers_per_block as u64 {
        return infeasible(format!(
            "{} registers × {threads_per_block} threads = {registers_per_block} registers per block; {} allows {}",
            resources.registers, device.name, device.registers_per_block
        ));
    }
    let shared = resources.shared_bytes + dynamic_shared_bytes;
    if shared > device.shared_bytes_per_block_optin as u64 {
        return infeasible(format!("{shared} bytes of shared memory per block; {} allows {}", device.name, device.shared_bytes_per_block_optin));
    }
    let warp = device.warp_size.max(1) as u64;
    let warps_per_block = threads_per_block.div_ceil(warp);
    let max_warps = (device.max_threads_per_multiprocessor as u64 / warp).max(1);
    let mut limits = vec![("threads", max_warps / warps_per_block), ("blocks", device.max_blocks_per_multiprocessor as u64)];
    if resources.registers > 0 {
        let per_warp = (resources.registers as u64 * warp).div_ceil(REGISTER_ALLOCATION_UNIT as u64) * REGISTER_ALLOCATION_UNIT as u64;
        limits.push(("registers", device.registers_per_multiprocessor as u64 / (per_warp * warps_per_block)));
    }
    if shared > 0 {
        let per_block = shared.div_ceil(SHARED_ALLOCATION_UNIT) * SHARED_ALLOCATION_UNIT + SHARED_RESERVED_PER_BLOCK;
        limits.push(("shared memory", device.shared_bytes_per_multiprocessor as u64 / per_block));
    }
    let (limiter, blocks) = limits.into_iter().min_by_key(|(_, b)| *b).unwrap_or(("threads", 0));
    if blocks == 0 {
        return infeasible(format!("no block fits on an SM of {}: {limiter} run out", device.name));
    }
    let warps = blocks * warps_per_block;
    Ok(Occupancy { blocks_per_multiprocessor: blocks as u32, warps_per_multiprocessor: warps as u32, fraction: warps as f64 / max_warps as f64, limiter })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(registers: u32, shared_bytes: u64) -> KernelResources {
        KernelResources { registers, shared_bytes, ..KernelResources::default() }
    }

    fn h100() -> DeviceInfo {
        DeviceInfo::datasheet("sm_90").unwrap()
    }

    // Figures checked against CUDA's occupancy calculator for compute capability 9.0.
    #[test]
    fn occupancy_is_limited_by_threads_registers_or_shared_memory() {
        let full = fit(&h100(), 256, &resources(32, 0), 0).unwrap();
        assert_eq!((full.blocks_per_multiprocessor, full.warps_per_multiprocessor, full.limiter), (8, 64, "threads"));
        assert_eq!(full.fraction, 1.0);
        // 64 registers: 2048 per warp, 32 warps fit in 65,536.
        let registers = fit(&h100(), 256, &resources(64, 0), 0).unwrap();
        assert_eq!((registers.blocks_per_multiprocessor, registers.limiter), (4, "registers"));
        assert_eq!(registers.fraction, 0.5);
        // 48 KiB + 1 KiB reserved per block: 4 of them in 228 KiB.
        let shared = fit(&h100(), 128, &resources(16, 48 * 1024), 0).unwrap();
        assert_eq!((shared.blocks_per_multiprocessor, shared.limiter), (4, "shared memory"));
        let small = fit(&h100(), 32, &resources(16, 0), 0).unwrap();
        assert_eq!((small.blocks_per_multiprocessor, small.limiter), (32, "blocks"));
    }

    #[test]
    fn configurations_over_a_limit_say_which() {
        let too_many_registers = fit(&h100(), 1024, &resources(255, 0), 0).unwrap_err();
        assert!(too_many_registers.reason.contains("255 registers × 1024 threads = 261120 registers per block"), "{}", too_many_registers.reason);
        let too_much_shared = fit(&h100(), 128, &resources(16, 40 * 1024), 200 * 1024).unwrap_err();
        assert!(too_much_shared.reason.contains("245760 bytes of shared memory per block"), "{}", too_much_shared.reason);
        assert!(fit(&h100(), 2048, &resources(16, 0), 0).unwrap_err().reason.contains("2048 threads per block"));
    }
}
