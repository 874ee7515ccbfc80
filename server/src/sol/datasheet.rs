//! Published peak figures, for devices whose ceilings could not be measured.
//!
//! Sources: NVIDIA's product datasheets (memory bandwidth, FP32) and architecture whitepapers
//! (non-tensor FP16: Volta/Ampere GA100/Hopper/Blackwell and Turing run `half2` at twice the
//! FP32 rate; Ampere GA10x and Ada at the same rate). Where a datasheet gives no non-tensor
//! FP16 figure, the architecture's ratio is applied to its FP32 figure.
//!
//! A datasheet peak is at least what the hardware reaches, so a bound computed from it stays a
//! lower bound on time: only looser than a measured one.

/// One table row: the words a device name must contain, and its figures.
struct Entry {
    /// Shown wherever these figures are used, e.g. `H100 SXM`.
    label: &'static str,
    /// Every one of these must be a word of the device name (case-insensitive; words are split
    /// at spaces, `-` and `_`), e.g. `NVIDIA A100-SXM4-80GB` has the words `A100` and `80GB`.
    words: &'static [&'static str],
    /// Peak DRAM bandwidth, GB/s.
    memory_gbs: f64,
    fp32_tflops: f64,
    /// Non-tensor FP16 (`half2` FMA).
    fp16_tflops: f64,
}

/// More specific rows first: the first row whose words all match wins.
const TABLE: &[Entry] = &[
    Entry { label: "B200", words: &["B200"], memory_gbs: 8000.0, fp32_tflops: 80.0, fp16_tflops: 160.0 },
    Entry { label: "H200 SXM", words: &["H200"], memory_gbs: 4800.0, fp32_tflops: 67.0, fp16_tflops: 134.0 },
    Entry { label: "H100 PCIe", words: &["H100", "PCIE"], memory_gbs: 2000.0, fp32_tflops: 51.2, fp16_tflops: 102.4 },
    Entry { label: "H100 SXM", words: &["H100", "HBM3"], memory_gbs: 3350.0, fp32_tflops: 66.9, fp16_tflops: 133.8 },
    Entry { label: "H100 SXM", words: &["H100", "SXM5"], memory_gbs: 3350.0, fp32_tflops: 66.9, fp16_tflops: 133.8 },
    Entry { label: "A100 80GB PCIe", words: &["A100", "80GB", "PCIE"], memory_gbs: 1935.0, fp32_tflops: 19.5, fp16_tflops: 78.0 },
    Entry { label: "A100 80GB SXM", words: &["A100", "80GB"], memory_gbs: 2039.0, fp32_tflops: 19.5, fp16_tflops: 78.0 },
    Entry { label: "A100 40GB", words: &["A100", "40GB"], memory_gbs: 1555.0, fp32_tflops: 19.5, fp16_tflops: 78.0 },
    Entry { label: "L40S", words: &["L40S"], memory_gbs: 864.0, fp32_tflops: 91.6, fp16_tflops: 91.6 },
    Entry { label: "L4", words: &["L4"], memory_gbs: 300.0, fp32_tflops: 30.3, fp16_tflops: 30.3 },
    Entry { label: "A10", words: &["A10"], memory_gbs: 600.0, fp32_tflops: 31.2, fp16_tflops: 31.2 },
    Entry { label: "T4", words: &["T4"], memory_gbs: 320.0, fp32_tflops: 8.1, fp16_tflops: 16.2 },
    Entry { label: "RTX 4090", words: &["RTX", "4090"], memory_gbs: 1008.0, fp32_tflops: 82.6, fp16_tflops: 82.6 },
];

/// The figures for a device name (as the driver reports it): (label, GB/s, FP32 TFLOPS, FP16
/// TFLOPS), or `None` for a device the table does not know.
pub(super) fn lookup(device_name: &str) -> Option<(&'static str, f64, f64, f64)> {
    let words: Vec<String> = device_name.split([' ', '-', '_']).filter(|w| !w.is_empty()).map(str::to_ascii_uppercase).collect();
    TABLE
        .iter()
        .find(|entry| entry.words.iter().all(|wanted| words.iter().any(|w| w == wanted)))
        .map(|e| (e.label, e.memory_gbs, e.fp32_tflops, e.fp16_tflops))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_names_find_their_rows() {
        let label = |name: &str| lookup(name).map(|(label, ..)| label);
        assert_eq!(label("NVIDIA H100 80GB HBM3"), Some("H100 SXM"));
        assert_eq!(label("NVIDIA H100 PCIe"), Some("H100 PCIe"));
        assert_eq!(label("NVIDIA H200"), Some("H200 SXM"));
        assert_eq!(label("NVIDIA A100-SXM4-40GB"), Some("A100 40GB"));
        assert_eq!(label("NVIDIA A100-PCIE-40GB"), Some("A100 40GB"));
        assert_eq!(label("NVIDIA A100-SXM4-80GB"), Some("A100 80GB SXM"));
        assert_eq!(label("NVIDIA A100 80GB PCIe"), Some("A100 80GB PCIe"));
        assert_eq!(label("NVIDIA L40S"), Some("L40S"));
        assert_eq!(label("NVIDIA L4"), Some("L4"));
        assert_eq!(label("NVIDIA A10"), Some("A10"));
        assert_eq!(label("Tesla T4"), Some("T4"));
        assert_eq!(label("NVIDIA GeForce RTX 4090"), Some("RTX 4090"));
        assert_eq!(label("NVIDIA B200"), Some("B200"));
    }

    #[test]
    fn similar_names_are_not_taken_for_one_another() {
        // Whole words only: an A10G, an H100 NVL or an RTX 4080 is not in the table.
        for name in ["NVIDIA A10G", "NVIDIA H100 NVL", "NVIDIA GeForce RTX 4080", "NVIDIA GeForce GTX 1080", "Tesla V100-SXM2-16GB"] {
            assert_eq!(lookup(name), None, "{name}");
        }
    }

    #[test]
    fn every_row_has_positive_figures() {
        for entry in TABLE {
            assert!(entry.memory_gbs > 0.0 && entry.fp32_tflops > 0.0 && entry.fp16_tflops >= entry.fp32_tflops, "{}", entry.label);
        }
    }
}
