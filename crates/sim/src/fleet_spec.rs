//! A disaggregated fleet as the command line names it (`servebench sim --prefill … --decode …
//! --router … --fabric …`, `sweep --sim-prefill …`, [`crate::SimOptions::fleet`]): plain
//! strings, resolved against the GPU and model presets by [`FleetSpec::build`] into the
//! [`FleetConfig`] the simulator runs. Owns no model: shapes, router and fabric are parsed by
//! [`crate::disagg`].

use crate::disagg::{Fabric, FleetConfig, RouterPolicy, WorkerShape, RDMA_GB_S};
use crate::error::SimError;
use crate::model::EngineConfig;
use crate::presets::Presets;

/// A fleet's workers, router and fabric as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetSpec {
    /// Prefill workers, `WxTP[/epN][/dpa]` (workers × GPUs each).
    pub prefill: String,
    /// Decode workers, `WxTP[/epN][/dpa]`; `0x…`: aggregated (the prefill workers decode).
    pub decode: String,
    /// Router policy: `kv` (KV-aware) or `round-robin`.
    pub router: String,
    /// KV transfer fabric: `nvlink` (the GPU preset's link bandwidth) or `rdma`
    /// ([`RDMA_GB_S`] per GPU); `None`: [`Fabric::for_gpu`] (NVLink on GB200/GB300).
    pub fabric: Option<String>,
}

impl FleetSpec {
    /// The fleet of `gpu`/`model` presets this spec names; `adjust` may change each engine's
    /// configuration (an engine launch's limits).
    ///
    /// Errors ([`SimError::Disagg`] or the presets' own, one line): a shape that does not
    /// parse or fit, an unknown router or fabric, an unknown GPU or model.
    pub fn build(
        &self,
        gpu: &str,
        model: &str,
        adjust: impl Fn(&mut EngineConfig),
    ) -> Result<FleetConfig, SimError> {
        let bad = |spec: &str, why: &str| SimError::Disagg {
            spec: spec.to_string(),
            why: why.to_string(),
        };
        let router = RouterPolicy::parse(&self.router)
            .ok_or_else(|| bad(&self.router, "router: expected kv or round-robin"))?;
        let (_, g) = Presets::embedded().gpu(gpu)?;
        let fabric = match self.fabric.as_deref() {
            None => None,
            Some("nvlink") => Some(Fabric::Nvlink { gb_s: g.link_gb_s }),
            Some("rdma") => Some(Fabric::Rdma { gb_s: RDMA_GB_S }),
            Some(x) => return Err(bad(x, "fabric: expected nvlink or rdma")),
        };
        FleetConfig::from_presets(
            gpu,
            model,
            WorkerShape::parse(&self.prefill)?,
            WorkerShape::parse(&self.decode)?,
            fabric,
            router,
            adjust,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(router: &str, fabric: Option<&str>) -> FleetSpec {
        FleetSpec {
            prefill: "1x4/ep4/dpa".into(),
            decode: "2x8/ep8".into(),
            router: router.into(),
            fabric: fabric.map(str::to_string),
        }
    }

    #[test]
    fn a_spec_builds_the_fleet_it_names_and_bad_parts_are_one_line_errors() {
        let f = spec("round-robin", None)
            .build("gb200", "deepseek-r1-fp4", |_| {})
            .unwrap();
        assert_eq!(f.router, RouterPolicy::RoundRobin);
        assert!(matches!(f.fabric, Fabric::Nvlink { .. }), "{:?}", f.fabric);
        assert_eq!((f.prefill_engines, f.decode_engines), (1, 2));
        let f = spec("kv", Some("rdma"))
            .build("gb200", "deepseek-r1-fp4", |_| {})
            .unwrap();
        assert_eq!(f.fabric, Fabric::Rdma { gb_s: RDMA_GB_S });
        let e = spec("random", None)
            .build("gb200", "deepseek-r1-fp4", |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`random`") && e.contains("kv or round-robin"),
            "{e}"
        );
        let e = spec("kv", Some("pcie"))
            .build("gb200", "deepseek-r1-fp4", |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("nvlink or rdma") && !e.contains('\n'), "{e}");
    }
}
