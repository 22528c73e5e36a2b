//! The multinode (disaggregated) part of an agg row, in InferenceX `utils/process_result.py`'s
//! multinode shape (issue 32): `router` and `kv_p2p_transfer` after `osl`, `is_multinode: true`,
//! then per side `{prefill,decode}_{tp,pp,dcp_size,pcp_size,ep,dp_attention,num_workers}` and
//! `num_prefill_gpu`, `num_decode_gpu` in place of the single-node `tp` … `dp_attention` keys;
//! the per-GPU throughputs that follow use process_result's multinode denominators
//! ([`MultinodeFields::per_gpu`]).

use serde_json::{json, Map, Value};

/// One side's parallelism.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerFields {
    /// Tensor parallelism per worker (0 on an aggregated row's decode side).
    pub tp: u32,
    /// Pipeline parallelism.
    pub pp: u32,
    /// Decode context parallelism.
    pub dcp_size: u32,
    /// Prefill context parallelism.
    pub pcp_size: u32,
    /// Expert parallelism (0 on an aggregated row's decode side).
    pub ep: u32,
    /// DP attention.
    pub dp_attention: bool,
    /// Workers.
    pub num_workers: u32,
}

/// The multinode keys of an agg row.
#[derive(Debug, Clone, PartialEq)]
pub struct MultinodeFields {
    /// The catalog's `router` (`{"name": …, "version": …}`), when set.
    pub router: Option<Value>,
    /// The catalog's `kv-p2p-transfer` (`nixl`, `mori`, …), when set.
    pub kv_p2p_transfer: Option<String>,
    /// Prefill side.
    pub prefill: WorkerFields,
    /// Decode side.
    pub decode: WorkerFields,
    /// Prefill GPUs (`PREFILL_GPUS`).
    pub num_prefill_gpu: u32,
    /// Decode GPUs (`DECODE_GPUS`; 0 when aggregated).
    pub num_decode_gpu: u32,
}

/// The keys [`MultinodeFields::write`] writes after `is_multinode`, in order.
pub const MULTINODE_KEYS: [&str; 16] = [
    "prefill_tp",
    "prefill_pp",
    "prefill_dcp_size",
    "prefill_pcp_size",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_num_workers",
    "decode_tp",
    "decode_pp",
    "decode_dcp_size",
    "decode_pcp_size",
    "decode_ep",
    "decode_dp_attention",
    "decode_num_workers",
    "num_prefill_gpu",
    "num_decode_gpu",
];

impl MultinodeFields {
    /// The per-GPU throughputs of process_result.py's multinode rows, tok/s/GPU:
    /// `tput_per_gpu = total / (prefill + decode GPUs)`, `output_tput_per_gpu = output /
    /// decode GPUs` (all GPUs when there are none: aggregated), `input_tput_per_gpu = (total −
    /// output) / prefill GPUs`.
    pub fn per_gpu(&self, total_tok_s: f64, output_tok_s: f64) -> (f64, f64, f64) {
        let all = f64::from(self.num_prefill_gpu + self.num_decode_gpu).max(1.0);
        let out_den = if self.num_decode_gpu > 0 {
            f64::from(self.num_decode_gpu)
        } else {
            all
        };
        (
            total_tok_s / all,
            output_tok_s / out_den,
            (total_tok_s - output_tok_s) / f64::from(self.num_prefill_gpu).max(1.0),
        )
    }

    /// Writes `router`/`kv_p2p_transfer` (when set): the keys before `is_multinode`.
    pub fn write_components(&self, o: &mut Map<String, Value>) {
        if let Some(r) = &self.router {
            o.insert("router".into(), r.clone());
        }
        if let Some(k) = &self.kv_p2p_transfer {
            o.insert("kv_p2p_transfer".into(), json!(k));
        }
    }

    /// Writes [`MULTINODE_KEYS`] in order.
    pub fn write(&self, o: &mut Map<String, Value>) {
        for (side, w) in [("prefill", &self.prefill), ("decode", &self.decode)] {
            o.insert(format!("{side}_tp"), json!(w.tp));
            o.insert(format!("{side}_pp"), json!(w.pp));
            o.insert(format!("{side}_dcp_size"), json!(w.dcp_size));
            o.insert(format!("{side}_pcp_size"), json!(w.pcp_size));
            o.insert(format!("{side}_ep"), json!(w.ep));
            o.insert(format!("{side}_dp_attention"), json!(w.dp_attention));
            o.insert(format!("{side}_num_workers"), json!(w.num_workers));
        }
        o.insert("num_prefill_gpu".into(), json!(self.num_prefill_gpu));
        o.insert("num_decode_gpu".into(), json!(self.num_decode_gpu));
    }

    /// Reads them back; `None` when a key is missing or mistyped (`*_dp_attention` may be a
    /// boolean or process_result's `"true"`/`"false"` string).
    pub fn read(m: &Map<String, Value>) -> Option<MultinodeFields> {
        let u = |k: String| m.get(&k)?.as_u64().map(|v| v as u32);
        let b = |k: String| match m.get(&k)? {
            Value::Bool(b) => Some(*b),
            Value::String(s) => Some(s.eq_ignore_ascii_case("true")),
            _ => None,
        };
        let side = |s: &str| -> Option<WorkerFields> {
            Some(WorkerFields {
                tp: u(format!("{s}_tp"))?,
                pp: u(format!("{s}_pp"))?,
                dcp_size: u(format!("{s}_dcp_size"))?,
                pcp_size: u(format!("{s}_pcp_size"))?,
                ep: u(format!("{s}_ep"))?,
                dp_attention: b(format!("{s}_dp_attention"))?,
                num_workers: u(format!("{s}_num_workers"))?,
            })
        };
        Some(MultinodeFields {
            router: m.get("router").cloned(),
            kv_p2p_transfer: m
                .get("kv_p2p_transfer")
                .and_then(Value::as_str)
                .map(str::to_string),
            prefill: side("prefill")?,
            decode: side("decode")?,
            num_prefill_gpu: u("num_prefill_gpu".into())?,
            num_decode_gpu: u("num_decode_gpu".into())?,
        })
    }

    /// The side whose parallelism stands for the row's `tp`/`ep`/`dp_attention` when read as
    /// a single-node identity: decode, or prefill when there is no decode side.
    pub fn main_side(&self) -> &WorkerFields {
        if self.decode.num_workers > 0 && self.decode.tp > 0 {
            &self.decode
        } else {
            &self.prefill
        }
    }

    /// Schema fragments of the multinode keys (all optional in the schema: present exactly on
    /// multinode rows).
    pub fn schema_properties() -> Vec<(String, Value)> {
        let mut v = vec![
            (
                "router".to_string(),
                json!({"type": "object", "description": "multinode rows: the catalog's router {name, version}"}),
            ),
            (
                "kv_p2p_transfer".to_string(),
                json!({"type": "string", "description": "multinode rows: the catalog's kv-p2p-transfer (nixl, mori, …)"}),
            ),
        ];
        for k in MULTINODE_KEYS {
            let t = if k.ends_with("dp_attention") {
                json!({"type": "boolean"})
            } else {
                json!({"type": "integer", "description": "multinode rows (process_result.py's multinode shape)"})
            };
            v.push((k.to_string(), t));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_gpu_follows_process_result_multinode() {
        let w = |tp, n| WorkerFields {
            tp,
            pp: 1,
            dcp_size: 1,
            pcp_size: 1,
            ep: tp,
            dp_attention: false,
            num_workers: n,
        };
        let m = MultinodeFields {
            router: None,
            kv_p2p_transfer: None,
            prefill: w(4, 1),
            decode: w(8, 4),
            num_prefill_gpu: 4,
            num_decode_gpu: 32,
        };
        // the published GB200 row: total 6086.5 tok/s, output 3036.5 tok/s over 4 + 32 GPUs
        let (t, o, i) = m.per_gpu(6086.5, 3036.5);
        assert!((t - 6086.5 / 36.0).abs() < 1e-9);
        assert!((o - 3036.5 / 32.0).abs() < 1e-9);
        assert!((i - 3050.0 / 4.0).abs() < 1e-9);
        let mut o = Map::new();
        m.write(&mut o);
        assert_eq!(
            o.keys().map(String::as_str).collect::<Vec<_>>(),
            MULTINODE_KEYS
        );
        assert_eq!(MultinodeFields::read(&o), Some(m.clone()));
        let agg = MultinodeFields {
            num_decode_gpu: 0,
            decode: w(0, 0),
            ..m
        };
        assert_eq!(agg.per_gpu(100.0, 40.0).1, 40.0 / 4.0);
        assert_eq!(agg.main_side().tp, 4);
    }
}
