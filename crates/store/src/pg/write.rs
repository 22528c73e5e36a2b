//! PostgreSQL writes. A run is a `workflow_runs` row (`github_run_id` = −id: not a GitHub run;
//! `head_branch` = the run's branch) with its servebench facts in `servebench_runs`; a point
//! is a `benchmark_results` row (config resolved or created in `configs`, numeric keys of the
//! row in `metrics`, `error` NULL only for an `ok` point) upserted on InferenceX's point
//! identity, plus its verbatim row in `servebench_points` (one per repeat). Every write carries
//! a token: a retry after a lost commit acknowledgement finds its own row instead of adding one.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::PgStore;
use crate::baseline::ConfigKey;
use crate::columns::{check_origin_kind, now_utc, row_str, EvalColumns, PointColumns};
use crate::error::{err, Result};
use crate::{ImageProvenance, RunId, RunMeta, RunStatus};

/// Keys of a row that are its identity, not a measurement (left out of `metrics`).
const IDENTITY_KEYS: &[&str] = &[
    "conc",
    "isl",
    "osl",
    "tp",
    "ep",
    "pp",
    "dcp_size",
    "pcp_size",
    "num_gpus",
    "prefill_tp",
    "prefill_ep",
    "decode_tp",
    "decode_ep",
    "prefill_num_workers",
    "decode_num_workers",
    "num_prefill_gpu",
    "num_decode_gpu",
    "schema_version",
    "prefill_pp",
    "decode_pp",
];

/// InferenceX's `metrics` of a row: its top-level finite numbers that are not identity (and not
/// a modelled point's energy numbers: `crate::energy`).
pub(crate) fn metrics_of(v: &Value) -> Value {
    let mut m = Map::new();
    if let Some(o) = v.as_object() {
        for (k, x) in o {
            if x.as_f64().is_some_and(f64::is_finite)
                && !IDENTITY_KEYS.contains(&k.as_str())
                && !crate::energy::inferencex_metrics_filter(v, k)
            {
                m.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(m)
}

/// A token unique to one write call (process id, time, counter, a per-process random key).
fn token() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(t);
    h.write_u64(n);
    format!("{}-{t:x}-{n}-{:016x}", std::process::id(), h.finish())
}

fn opt_i32(x: Option<i64>) -> Option<i32> {
    x.and_then(|v| i32::try_from(v).ok())
}

impl PgStore {
    pub(crate) fn record_run(&mut self, meta: &RunMeta) -> Result<RunId> {
        let kind = meta.kind;
        let meta = Arc::new(meta.clone());
        let created = meta.created_at.clone().unwrap_or_else(now_utc);
        let meta_json = serde_json::to_string(&meta.meta)?;
        let tok = token();
        let id = self.call("recording the run", move |mut c| {
            let (meta, created, meta_json, tok) =
                (meta.clone(), created.clone(), meta_json.clone(), tok.clone());
            async move {
                let tx = c.transaction().await?;
                let old = tx
                    .query_opt(
                        "SELECT workflow_run_id FROM servebench_runs WHERE token = $1",
                        &[&tok],
                    )
                    .await?;
                if let Some(r) = old {
                    return Ok(r.get::<_, i64>(0));
                }
                let name = meta.label.clone().unwrap_or_else(|| {
                    format!("servebench {}", meta.kind.as_str())
                });
                let id: i64 = tx
                    .query_one(
                        "WITH s AS (SELECT nextval(pg_get_serial_sequence('workflow_runs', 'id')) AS v)
                         INSERT INTO workflow_runs (id, github_run_id, run_attempt, name, status,
                             head_branch, created_at, run_started_at, date)
                         SELECT v, -v, 0, $1, 'in_progress', $2, $3::text::timestamptz,
                             $3::text::timestamptz, ($3::text::timestamptz AT TIME ZONE 'UTC')::date
                         FROM s RETURNING id",
                        &[&name, &meta.branch, &created],
                    )
                    .await?
                    .get(0);
                tx.execute(
                    "INSERT INTO servebench_runs (workflow_run_id, token, created_at, kind, status,
                        label, endpoint, image, index_digest, platform_digest, config_key, topology,
                        workload, servebench_version, out_dir, meta_json)
                     VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9, $10, $11, $12, $13,
                        $14, $15)",
                    &[
                        &id,
                        &tok,
                        &created,
                        &meta.kind.as_str(),
                        &meta.label,
                        &meta.endpoint,
                        &meta.image,
                        &meta.index_digest,
                        &meta.platform_digest,
                        &meta.config_key,
                        &meta.topology,
                        &meta.workload,
                        &meta.servebench_version,
                        &meta.out_dir.as_ref().map(|p| p.display().to_string()),
                        &meta_json,
                    ],
                )
                .await?;
                tx.commit().await?;
                Ok(id)
            }
        })?;
        self.kinds.lock().unwrap().insert(RunId(id), kind);
        Ok(RunId(id))
    }

    /// Checks the run exists and takes rows of this origin.
    fn check_origin(&self, run: RunId, foreign: bool) -> Result<()> {
        let Some(kind) = self.kind_of(run)? else {
            return Err(err!("{}: run {run} does not exist", self.loc.display()));
        };
        check_origin_kind(&self.loc, run, kind.as_str(), foreign)
    }

    /// `configs.id` of `key`, created when new.
    fn config_id(&self, key: ConfigKey) -> Result<i32> {
        if let Some(id) = self.configs.lock().unwrap().get(&key) {
            return Ok(*id);
        }
        let k = Arc::new(key.clone());
        let id = self.call("writing a config", move |c| {
            let k = k.clone();
            async move {
                let row = c
                    .query_one(
                        "INSERT INTO configs (hardware, framework, model, precision, spec_method,
                            disagg, is_multinode, prefill_tp, prefill_ep, prefill_dp_attention,
                            prefill_num_workers, decode_tp, decode_ep, decode_dp_attention,
                            decode_num_workers, num_prefill_gpu, num_decode_gpu)
                         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)
                         ON CONFLICT ON CONSTRAINT configs_natural_key
                         DO UPDATE SET hardware = EXCLUDED.hardware RETURNING id",
                        &[
                            &k.hardware,
                            &k.framework,
                            &k.model,
                            &k.precision,
                            &k.spec_method,
                            &k.disagg,
                            &k.is_multinode,
                            &k.prefill_tp,
                            &k.prefill_ep,
                            &k.prefill_dp_attention,
                            &k.prefill_num_workers,
                            &k.decode_tp,
                            &k.decode_ep,
                            &k.decode_dp_attention,
                            &k.decode_num_workers,
                            &k.num_prefill_gpu,
                            &k.num_decode_gpu,
                        ],
                    )
                    .await?;
                Ok(row.get::<_, i32>(0))
            }
        })?;
        self.configs.lock().unwrap().insert(key, id);
        Ok(id)
    }

    pub(crate) fn insert_point(
        &mut self,
        run: RunId,
        foreign: bool,
        c: &PointColumns,
    ) -> Result<i64> {
        self.check_origin(run, foreign)?;
        let config = self.config_id(ConfigKey::of_row(&c.value))?;
        let v = &c.value;
        let error = (c.status != "ok").then(|| match c.invalid() {
            Some(why) => format!("{}: {why}", c.status),
            None => c.status.clone(),
        });
        let offload = row_str(v, "offload_mode").or_else(|| row_str(v, "kv_offloading"));
        let args = Arc::new((
            c.benchmark_type
                .clone()
                .unwrap_or_else(|| "single_turn".into()),
            opt_i32(c.isl),
            opt_i32(c.osl),
            opt_i32(c.conc),
            c.image.clone(),
            serde_json::to_string(&metrics_of(v))?,
            error,
            offload,
            token(),
            now_utc(),
            (
                c.status.clone(),
                c.hw.clone(),
                c.records_file.clone(),
                c.invalid(),
            ),
            c.json.clone(),
            c.run_flag(),
            c.energy.clone(),
        ));
        self.call("storing a point", move |cl| {
            let a = args.clone();
            async move {
                let (st, hw, rf, inv) = &a.10;
                let en = &a.13;
                let valid = en.valid.and_then(|v| i16::try_from(v).ok());
                // prepared once per pooled connection (a plain-text query is parsed and
                // described on every call: one more round trip per point)
                let stmt = cl
                    .prepare_cached(
                        "WITH br AS (
                           INSERT INTO benchmark_results (workflow_run_id, config_id,
                               benchmark_type, date, isl, osl, conc, image, metrics, error,
                               offload_mode)
                           SELECT $1, $2, $3, wr.date, $4, $5, $6, $7, $8::text::jsonb, $9, $10
                           FROM workflow_runs wr WHERE wr.id = $1
                           ON CONFLICT ON CONSTRAINT benchmark_results_identity DO UPDATE
                             SET metrics = EXCLUDED.metrics, error = EXCLUDED.error,
                                 image = EXCLUDED.image
                           RETURNING id),
                         sp AS (
                           INSERT INTO servebench_points (workflow_run_id, benchmark_result_id,
                               token, created_at, status, hw, records_file, invalid_reason, row_json,
                               power_source, power_valid, avg_power_w, total_gpu_energy_j,
                               joules_per_output_token, joules_per_total_token)
                           SELECT $1, br.id, $11, $12, $13, $14, $15, $16, $17,
                                  $19, $20, $21, $22, $23, $24 FROM br
                           ON CONFLICT (token) DO NOTHING RETURNING id),
                         fl AS (
                           UPDATE servebench_runs SET invalid_reason = CASE
                               WHEN invalid_reason IS NULL THEN $18::text
                               ELSE invalid_reason || '; ' || $18::text END
                           WHERE workflow_run_id = $1 AND $18::text IS NOT NULL
                             AND EXISTS (SELECT 1 FROM sp)
                           RETURNING 1)
                         SELECT id FROM sp
                         UNION ALL SELECT id FROM servebench_points WHERE token = $11
                         LIMIT 1",
                    )
                    .await?;
                let row = cl
                    .query_one(
                        &stmt,
                        &[
                            &run.0, &config, &a.0, &a.1, &a.2, &a.3, &a.4, &a.5, &a.6, &a.7,
                            &a.8, &a.9, st, hw, rf, inv, &a.11, &a.12, &en.source, &valid,
                            &en.avg_power_w, &en.total_gpu_energy_j,
                            &en.joules_per_output_token, &en.joules_per_total_token,
                        ],
                    )
                    .await?;
                Ok(row.get::<_, i64>(0))
            }
        })
    }

    pub(crate) fn insert_eval(
        &mut self,
        run: RunId,
        foreign: bool,
        c: &EvalColumns,
    ) -> Result<i64> {
        self.check_origin(run, foreign)?;
        let config = self.config_id(ConfigKey::of_row(&c.value))?;
        let v = &c.value;
        let args = Arc::new((
            c.task.to_lowercase(),
            opt_i32(crate::columns::row_int(v, "isl")),
            opt_i32(crate::columns::row_int(v, "osl")),
            opt_i32(c.conc),
            row_str(v, "lm_eval_version"),
            serde_json::to_string(&metrics_of(v))?,
            token(),
            now_utc(),
            (
                c.task.clone(),
                c.score_name.clone(),
                c.conc,
                c.score,
                c.n_eff,
            ),
            c.json.clone(),
        ));
        self.call("storing an eval row", move |cl| {
            let a = args.clone();
            async move {
                let (task, sn, conc, score, n_eff) = &a.8;
                let row = cl
                    .query_one(
                        "WITH er AS (
                           INSERT INTO eval_results (workflow_run_id, config_id, task, date, isl,
                               osl, conc, lm_eval_version, metrics)
                           SELECT $1, $2, $3, wr.date, $4, $5, $6, $7, $8::text::jsonb
                           FROM workflow_runs wr WHERE wr.id = $1
                           ON CONFLICT ON CONSTRAINT eval_results_identity DO UPDATE
                             SET metrics = EXCLUDED.metrics, lm_eval_version = EXCLUDED.lm_eval_version
                           RETURNING id),
                         se AS (
                           INSERT INTO servebench_evals (workflow_run_id, eval_result_id, token,
                               created_at, task, score_name, conc, score, n_eff, row_json)
                           SELECT $1, er.id, $9, $10, $11, $12, $13, $14, $15, $16 FROM er
                           ON CONFLICT (token) DO NOTHING RETURNING id)
                         SELECT id FROM se
                         UNION ALL SELECT id FROM servebench_evals WHERE token = $9
                         LIMIT 1",
                        &[
                            &run.0, &config, &a.0, &a.1, &a.2, &a.3, &a.4, &a.5, &a.6, &a.7,
                            task, sn, conc, score, n_eff, &a.9,
                        ],
                    )
                    .await?;
                Ok(row.get::<_, i64>(0))
            }
        })
    }

    pub(crate) fn set_provenance(&mut self, run: RunId, key: &str, value: &str) -> Result<()> {
        if self.kind_of(run)?.is_none() {
            return Err(err!("{}: run {run} does not exist", self.loc.display()));
        }
        let kv = Arc::new((key.to_string(), value.to_string()));
        self.call("recording provenance", move |c| {
            let kv = kv.clone();
            async move {
                c.execute(
                    "INSERT INTO servebench_provenance (workflow_run_id, key, value)
                     VALUES ($1, $2, $3)
                     ON CONFLICT (workflow_run_id, key) DO UPDATE SET value = EXCLUDED.value",
                    &[&run.0, &kv.0, &kv.1],
                )
                .await?;
                Ok(())
            }
        })
    }

    /// Sets status and finish time in `servebench_runs` and InferenceX's status/conclusion.
    pub(crate) fn set_status(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished: Option<String>,
    ) -> Result<()> {
        let conclusion = match status {
            RunStatus::Running => None,
            RunStatus::Ok => Some("success"),
            RunStatus::Partial | RunStatus::Failed => Some("failure"),
            RunStatus::Interrupted => Some("cancelled"),
        };
        let wf = if conclusion.is_some() {
            "completed"
        } else {
            "in_progress"
        };
        let n = self.call("updating the run", move |c| {
            let finished = finished.clone();
            async move {
                let n = c
                    .execute(
                        "WITH u AS (UPDATE servebench_runs SET status = $2, finished_at = $3
                                    WHERE workflow_run_id = $1 RETURNING 1)
                         UPDATE workflow_runs SET status = $4, conclusion = $5
                         WHERE id = $1 AND EXISTS (SELECT 1 FROM u)",
                        &[&run.0, &status.as_str(), &finished, &wf, &conclusion],
                    )
                    .await?;
                Ok(n)
            }
        })?;
        if n == 0 {
            return Err(err!("{}: run {run} does not exist", self.loc.display()));
        }
        Ok(())
    }

    /// Deletes a point row and its `benchmark_results` row when no other repeat refers to it.
    pub(crate) fn delete_point(&mut self, run: RunId, point_id: i64) -> Result<bool> {
        self.call("deleting a point", move |c| async move {
            let n: i64 = c
                .query_one(
                    "WITH d AS (DELETE FROM servebench_points WHERE id = $1 AND workflow_run_id = $2
                                RETURNING benchmark_result_id),
                     b AS (DELETE FROM benchmark_results b USING d
                           WHERE b.id = d.benchmark_result_id
                             AND NOT EXISTS (SELECT 1 FROM servebench_points p
                                             WHERE p.benchmark_result_id = b.id AND p.id <> $1)
                           RETURNING 1)
                     SELECT count(*) FROM d",
                    &[&point_id, &run.0],
                )
                .await?
                .get(0);
            Ok(n > 0)
        })
    }

    pub(crate) fn delete_evals(&mut self, run: RunId) -> Result<usize> {
        self.call("deleting eval rows", move |c| async move {
            let n = c
                .execute(
                    "DELETE FROM servebench_evals WHERE workflow_run_id = $1",
                    &[&run.0],
                )
                .await?;
            c.execute(
                "DELETE FROM eval_results e WHERE e.workflow_run_id = $1
                   AND NOT EXISTS (SELECT 1 FROM servebench_evals s WHERE s.eval_result_id = e.id)",
                &[&run.0],
            )
            .await?;
            Ok(n as usize)
        })
    }

    pub(crate) fn record_image_provenance(&mut self, p: &ImageProvenance, at: &str) -> Result<i64> {
        let a = Arc::new((
            p.clone(),
            serde_json::to_string(&p.platform_digests)?,
            serde_json::to_string(&p.labels)?,
            serde_json::to_string(&p.change)?,
            at.to_string(),
        ));
        self.call("recording image provenance", move |c| {
            let a = a.clone();
            async move {
                let p = &a.0;
                let row = c
                    .query_one(
                        "INSERT INTO servebench_image_provenance (recorded_at, image, role,
                            config_key, index_digest, platform_digests_json, labels_json,
                            image_created, source, change_json)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
                        &[
                            &a.4,
                            &p.image,
                            &p.role,
                            &p.config_key,
                            &p.index_digest,
                            &a.1,
                            &a.2,
                            &p.image_created,
                            &p.source,
                            &a.3,
                        ],
                    )
                    .await?;
                Ok(row.get::<_, i64>(0))
            }
        })
    }
}
