//! The GPU tools a real recipe probes under `--simulate` — `nvidia-smi` on an NVIDIA runner,
//! `rocm-smi` and `amd-smi` on an AMD one (each vendor's tools only, as on the real host:
//! benchmark_lib.sh's `start_gpu_monitor` picks the vendor by `command -v nvidia-smi`) — speaking
//! for the runner's real SKU (`cluster:mi355x-amds` → `AMD Instinct MI355X`), not for the
//! simulator preset that stands in for it (an SKU without a preset, e.g. `rtx6000pro` or
//! `gb200`, is simulated as another GPU, but its tools still name it).
//!
//! What is simulated: the GPU count (the point's GPUs), names, memory size (the SKU's HBM),
//! and an idle device: 0 % VRAM allocated, 0 MiB used (benchmark_lib.sh's
//! `wait_for_amd_gpu_clean` greps `GPU Memory Allocated (VRAM%): N` and waits until ≤ 10 %).
//! Power, clocks, temperatures and utilisation have no simulated value: `[N/A]` (nvidia-smi's
//! word for an unsupported field) or `N/A` (amd-smi's). Firmware versions are a fixed number,
//! marked simulated in the output.

use std::time::Duration;

use crate::shim::flag_value;

/// GPU vendor of a runner SKU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// NVIDIA (`nvidia-smi`).
    Nvidia,
    /// AMD (`rocm-smi`, `amd-smi`).
    Amd,
}

impl Vendor {
    /// The GPU tools a host of this vendor has (the shims installed for it).
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Vendor::Nvidia => &["nvidia-smi"],
            Vendor::Amd => &["rocm-smi", "amd-smi"],
        }
    }

    /// `nvidia` or `amd`.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
        }
    }
}

/// Every GPU tool shimmed for some vendor.
pub const ALL_TOOLS: &[&str] = &["nvidia-smi", "rocm-smi", "amd-smi"];

/// A runner's GPU as its tools name it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSku {
    /// The SKU of the runner label (`mi355x`).
    pub sku: String,
    /// Vendor.
    pub vendor: Vendor,
    /// The product name the vendor's tool prints (`AMD Instinct MI355X`, `NVIDIA B200`).
    pub name: String,
    /// Device memory, MiB (the SKU's HBM: 288 GB → 294912).
    pub memory_mib: u64,
}

/// The GPU of a runner SKU (`recipe::sku` of the runner label). Known SKUs carry their
/// product name and HBM size (vendor data sheets: H100 80 GB, H200 141 GB, B200 180 GB, B300
/// 288 GB, GB200 186 GB, GB300 288 GB, RTX PRO 6000 96 GB, MI300X 192 GB, MI325X 256 GB, MI355X
/// 288 GB); another `mi…` SKU is AMD, anything else NVIDIA, named after the SKU with 80 GB.
pub fn gpu_sku(sku: &str) -> GpuSku {
    let s = sku.to_ascii_lowercase();
    let (vendor, name, gb): (Vendor, &str, u64) = match s.as_str() {
        "h100" => (Vendor::Nvidia, "NVIDIA H100 80GB HBM3", 80),
        "h200" => (Vendor::Nvidia, "NVIDIA H200", 141),
        "b200" => (Vendor::Nvidia, "NVIDIA B200", 180),
        "b300" => (Vendor::Nvidia, "NVIDIA B300", 288),
        "gb200" => (Vendor::Nvidia, "NVIDIA GB200", 186),
        "gb300" => (Vendor::Nvidia, "NVIDIA GB300", 288),
        "rtx6000pro" => (
            Vendor::Nvidia,
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            96,
        ),
        "mi300x" => (Vendor::Amd, "AMD Instinct MI300X", 192),
        "mi325x" => (Vendor::Amd, "AMD Instinct MI325X", 256),
        "mi355x" => (Vendor::Amd, "AMD Instinct MI355X", 288),
        _ => {
            let amd = s.starts_with("mi");
            let name = if amd {
                format!("AMD Instinct {}", s.to_ascii_uppercase())
            } else {
                format!("NVIDIA {}", s.to_ascii_uppercase())
            };
            return GpuSku {
                sku: s,
                vendor: if amd { Vendor::Amd } else { Vendor::Nvidia },
                name,
                memory_mib: 80 * 1024,
            };
        }
    };
    GpuSku {
        sku: s,
        vendor,
        name: name.into(),
        memory_mib: gb * 1024,
    }
}

fn interval(args: &[String], names: &[&str], ms_names: &[&str]) -> Option<Duration> {
    flag_value(args, names)
        .and_then(|v| v.parse::<f64>().ok())
        .map(Duration::from_secs_f64)
        .or_else(|| {
            flag_value(args, ms_names)
                .and_then(|v| v.parse::<f64>().ok())
                .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        })
}

/// The output of one call of `tool` (`nvidia-smi`, `rocm-smi`, `amd-smi`) with `args` for
/// `count` GPUs of `gpu`: (stdout text, exit status, the loop interval for `-l N` / `-w N`).
pub fn smi(
    tool: &str,
    args: &[String],
    gpu: &GpuSku,
    count: u32,
) -> (String, i32, Option<Duration>) {
    match tool {
        "rocm-smi" => (rocm_smi(args, gpu, count), 0, None),
        "amd-smi" => amd_smi(args, gpu, count),
        _ => {
            let (t, l) = nvidia_smi(args, gpu, count);
            (t, 0, l)
        }
    }
}

fn nvidia_smi(args: &[String], gpu: &GpuSku, count: u32) -> (String, Option<Duration>) {
    let name = &gpu.name;
    let every = interval(args, &["-l", "--loop"], &["-lms", "--loop-ms"]);
    if let Some(q) = flag_value(args, &["--query-gpu"]) {
        let fields: Vec<&str> = q.split(',').map(str::trim).collect();
        let fmt = flag_value(args, &["--format"]).unwrap_or_default();
        let units = !fmt.contains("nounits");
        let mut s = String::new();
        if !fmt.contains("noheader") {
            s.push_str(&fields.join(", "));
            s.push('\n');
        }
        let now = chrono::Local::now()
            .format("%Y/%m/%d %H:%M:%S%.3f")
            .to_string();
        let mib = |v: u64| {
            if units {
                format!("{v} MiB")
            } else {
                v.to_string()
            }
        };
        for i in 0..count {
            let row: Vec<String> = fields
                .iter()
                .map(|f| match *f {
                    "timestamp" => now.clone(),
                    "index" => i.to_string(),
                    "name" | "gpu_name" => name.clone(),
                    "count" => count.to_string(),
                    "uuid" | "gpu_uuid" => format!("GPU-00000000-0000-0000-0000-{i:012}"),
                    "pci.bus_id" | "gpu_bus_id" => format!("00000000:{:02X}:00.0", i + 1),
                    "memory.total" => mib(gpu.memory_mib),
                    "memory.used" => mib(0),
                    "memory.free" => mib(gpu.memory_mib),
                    _ => "[N/A]".into(),
                })
                .collect();
            s.push_str(&row.join(", "));
            s.push('\n');
        }
        return (s, every);
    }
    if args.iter().any(|a| a == "-L" || a == "--list-gpus") {
        let s = (0..count)
            .map(|i| format!("GPU {i}: {name} (UUID: GPU-00000000-0000-0000-0000-{i:012})\n"))
            .collect();
        return (s, None);
    }
    let mut s = String::from("+-----------------------------------------------------------------------------+\n| NVIDIA-SMI (simulated by servebench --simulate)                              |\n|-----------------------------------------------------------------------------|\n");
    for i in 0..count {
        s.push_str(&format!(
            "| {i:>3}  {name:<44}   0MiB / {:>6}MiB          |\n",
            gpu.memory_mib
        ));
    }
    s.push_str("+-----------------------------------------------------------------------------+\n");
    (s, every)
}

const ROCM_TOP: &str =
    "============================ ROCm System Management Interface ============================\n";
const ROCM_END: &str =
    "================================== End of ROCm SMI Log ===================================\n";

fn rocm_smi(args: &[String], gpu: &GpuSku, count: u32) -> String {
    let mut s = String::from(ROCM_TOP);
    let per_gpu = |s: &mut String, lines: &[String]| {
        for i in 0..count {
            for l in lines {
                s.push_str(&format!("GPU[{i}]\t\t: {l}\n"));
            }
        }
    };
    let has = |f: &str| args.iter().any(|a| a == f);
    let mut any = false;
    if has("--showmemuse") {
        any = true;
        s.push_str("=================================== Current Memory Use ===================================\n");
        per_gpu(
            &mut s,
            &[
                "GPU Memory Allocated (VRAM%): 0".into(),
                "GPU Memory Read/Write Activity (%): 0".into(),
            ],
        );
    }
    if has("--showfw") {
        any = true;
        s.push_str("================================== Firmware Information ==================================\n");
        per_gpu(&mut s, &["MEC firmware version: \t177".into()]);
        s.push_str("(firmware versions simulated by servebench --simulate)\n");
    }
    if has("--showmeminfo") {
        any = true;
        let b = gpu.memory_mib * 1024 * 1024;
        s.push_str("================================== Memory Usage (Bytes) ==================================\n");
        per_gpu(
            &mut s,
            &[
                format!("VRAM Total Memory (B): {b}"),
                "VRAM Total Used Memory (B): 0".into(),
            ],
        );
    }
    if has("--showproductname") || !any {
        s.push_str("====================================== Product Info ======================================\n");
        per_gpu(
            &mut s,
            &[
                format!("Card Series: \t\t{} (simulated by servebench)", gpu.name),
                "Card Vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]".into(),
            ],
        );
    }
    s.push_str(ROCM_END);
    s
}

fn amd_smi(args: &[String], gpu: &GpuSku, count: u32) -> (String, i32, Option<Duration>) {
    let csv = args.iter().any(|a| a == "--csv");
    let json = args.iter().any(|a| a == "--json");
    match args.first().map(String::as_str) {
        None | Some("list") => {
            let mut s = String::new();
            for i in 0..count {
                s.push_str(&format!(
                    "GPU: {i}\n    BDF: 0000:{:02x}:00.0\n    UUID: 00000000-0000-0000-0000-{i:012}\n    NAME: {} (simulated by servebench)\n\n",
                    i + 1,
                    gpu.name
                ));
            }
            (s, 0, None)
        }
        Some("static") => {
            let rows: Vec<String> = (0..count)
                .map(|i| {
                    format!(
                        "{{\"gpu\": {i}, \"asic\": {{\"market_name\": \"{}\", \"vendor_name\": \"Advanced Micro Devices Inc. [AMD/ATI]\"}}, \"vram\": {{\"size\": {{\"value\": {}, \"unit\": \"MB\"}}}}, \"simulated\": true}}",
                        gpu.name, gpu.memory_mib
                    )
                })
                .collect();
            if json {
                (format!("[{}]\n", rows.join(", ")), 0, None)
            } else {
                let s = (0..count)
                    .map(|i| format!("GPU: {i}\n    ASIC:\n        MARKET_NAME: {}\n", gpu.name))
                    .collect();
                (s, 0, None)
            }
        }
        Some("metric") => {
            let every = interval(args, &["-w", "--watch"], &[]);
            let energy = args.iter().any(|a| a == "-E" || a == "--energy");
            let mut s = String::new();
            if energy {
                if csv {
                    s.push_str("gpu,total_energy_consumption\n");
                }
                for i in 0..count {
                    s.push_str(&format!("{i},N/A\n"));
                }
                return (s, 0, None);
            }
            let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string();
            s.push_str("timestamp,gpu,socket_power,gfx_clk,mem_clk,hotspot_temperature,gfx_usage,umc_usage,vram_used,vram_total\n");
            for i in 0..count {
                s.push_str(&format!(
                    "{now},{i},N/A,N/A,N/A,N/A,N/A,N/A,0,{}\n",
                    gpu.memory_mib
                ));
            }
            (s, 0, every)
        }
        Some(other) => (
            format!("servebench-shim: `amd-smi {other}` is not simulated\n"),
            2,
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn each_sku_is_named_by_its_vendors_tools() {
        let mi = gpu_sku("mi355x");
        assert_eq!(mi.vendor, Vendor::Amd);
        assert_eq!(mi.vendor.tools(), &["rocm-smi", "amd-smi"]);
        let (t, c, _) = smi("rocm-smi", &a("--showmemuse"), &mi, 8);
        assert_eq!(c, 0);
        assert_eq!(
            t.matches("GPU Memory Allocated (VRAM%): 0").count(),
            8,
            "{t}"
        );
        assert!(!t.contains("NVIDIA"), "{t}");
        // what wait_for_amd_gpu_clean greps
        assert!(
            t.contains("GPU[7]\t\t: GPU Memory Allocated (VRAM%): 0\n"),
            "{t}"
        );
        let (t, _, _) = smi("rocm-smi", &a("--showfw"), &mi, 1);
        let mec = t.lines().find(|l| l.contains("MEC")).unwrap();
        assert_eq!(mec.split_whitespace().last(), Some("177"), "{t}");
        let (t, _, _) = smi("rocm-smi", &[], &gpu_sku("mi300x"), 2);
        assert_eq!(t.matches("AMD Instinct MI300X").count(), 2, "{t}");
        let (t, _, every) = smi("amd-smi", &a("metric -p -c -t -u -w 1 --csv"), &mi, 2);
        assert!(t.starts_with("timestamp,"), "{t}");
        assert_eq!(every, Some(Duration::from_secs(1)));
        let b = gpu_sku("b300");
        assert_eq!(b.vendor, Vendor::Nvidia);
        let (t, _) = nvidia_smi(
            &a("--query-gpu=name,memory.used,memory.total --format=csv,noheader,nounits"),
            &b,
            2,
        );
        assert_eq!(t.lines().next(), Some("NVIDIA B300, 0, 294912"));
        assert_eq!(
            gpu_sku("rtx6000pro").name,
            "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        );
        assert_eq!(gpu_sku("mi400").vendor, Vendor::Amd);
    }

    #[test]
    fn nvidia_smi_lists_the_runner_gpus() {
        let (s, l) = nvidia_smi(
            &a("--query-gpu=index,name,power.draw --format=csv -l 1"),
            &gpu_sku("b200"),
            2,
        );
        assert_eq!(l, Some(Duration::from_secs(1)));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "index, name, power.draw");
        assert_eq!(lines[1], "0, NVIDIA B200, [N/A]");
        assert_eq!(lines.len(), 3);
        let (s, _) = nvidia_smi(&[], &gpu_sku("b200"), 8);
        assert_eq!(s.matches("NVIDIA B200").count(), 8);
    }
}
