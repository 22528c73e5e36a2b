//! The PostgreSQL schema: InferenceX-app's result tables (`configs`, `workflow_runs`,
//! `server_logs`, `benchmark_results`, `eval_results`; same table and column names and
//! meanings, DDL written here) and servebench's own `servebench_*` tables. Versioned in
//! `servebench_schema`; migration i upgrades version i → i+1, append only.
//!
//! Differences from InferenceX-app's DDL, on purpose: `benchmark_results.isl`/`osl`/`conc` may
//! be NULL (AgentX points: `agentic_traces`, no lengths), `offload_mode` is a column, and the
//! point identity `(workflow_run_id, config_id, benchmark_type, isl, osl, conc, offload_mode)`
//! is one `UNIQUE NULLS NOT DISTINCT` constraint (PostgreSQL ≥ 15), as InferenceX's ingest
//! treats it; `eval_results`' identity is NULLS NOT DISTINCT too, so a retried write never
//! doubles a row.

/// Schema version this build writes (`servebench_schema.version`).
pub const PG_SCHEMA_VERSION: i64 = 2;

/// Advisory lock key held while migrating (any constant both writers agree on).
pub(crate) const MIGRATION_LOCK: i64 = 0x5e7e_be7c;

/// The migrations; index i upgrades version i → i+1.
pub(crate) const PG_MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE servebench_schema (version integer NOT NULL);
INSERT INTO servebench_schema VALUES (0);

CREATE TABLE configs (
  id                   serial PRIMARY KEY,
  hardware             text     NOT NULL CHECK (hardware = lower(hardware)),
  framework            text     NOT NULL CHECK (framework = lower(framework)),
  model                text     NOT NULL CHECK (model = lower(model)),
  precision            text     NOT NULL CHECK (precision = lower(precision)),
  spec_method          text     NOT NULL CHECK (spec_method = lower(spec_method)),
  disagg               boolean  NOT NULL DEFAULT false,
  is_multinode         boolean  NOT NULL DEFAULT false,
  prefill_tp           smallint NOT NULL CHECK (prefill_tp >= 1),
  prefill_ep           smallint NOT NULL DEFAULT 1 CHECK (prefill_ep >= 1),
  prefill_dp_attention boolean  NOT NULL DEFAULT false,
  prefill_num_workers  smallint NOT NULL DEFAULT 0 CHECK (prefill_num_workers >= 0),
  decode_tp            smallint NOT NULL CHECK (decode_tp >= 1),
  decode_ep            smallint NOT NULL DEFAULT 1 CHECK (decode_ep >= 1),
  decode_dp_attention  boolean  NOT NULL DEFAULT false,
  decode_num_workers   smallint NOT NULL DEFAULT 0 CHECK (decode_num_workers >= 0),
  num_prefill_gpu      smallint NOT NULL CHECK (num_prefill_gpu >= 1),
  num_decode_gpu       smallint NOT NULL CHECK (num_decode_gpu >= 1),
  CONSTRAINT configs_natural_key UNIQUE (hardware, framework, model, precision, spec_method,
    disagg, is_multinode, prefill_tp, prefill_ep, prefill_dp_attention, prefill_num_workers,
    decode_tp, decode_ep, decode_dp_attention, decode_num_workers, num_prefill_gpu,
    num_decode_gpu)
);
CREATE INDEX configs_model_hardware_idx ON configs (model, hardware);

CREATE TABLE workflow_runs (
  id             bigserial   PRIMARY KEY,
  github_run_id  bigint      NOT NULL,
  run_attempt    smallint    NOT NULL DEFAULT 0 CHECK (run_attempt >= 0),
  name           text        NOT NULL,
  status         text,
  conclusion     text,
  head_sha       text,
  head_branch    text,
  html_url       text,
  created_at     timestamptz NOT NULL,
  run_started_at timestamptz,
  date           date        NOT NULL,
  CONSTRAINT workflow_runs_natural_key UNIQUE (github_run_id, run_attempt)
);
CREATE INDEX workflow_runs_branch_idx ON workflow_runs (head_branch, date);

CREATE TABLE server_logs (
  id         bigserial PRIMARY KEY,
  server_log text      NOT NULL
);

CREATE TABLE benchmark_results (
  id              bigserial PRIMARY KEY,
  workflow_run_id bigint    NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  config_id       integer   NOT NULL REFERENCES configs(id),
  benchmark_type  text      NOT NULL,
  date            date      NOT NULL,
  isl             integer,
  osl             integer,
  conc            integer,
  image           text,
  metrics         jsonb     NOT NULL,
  error           text,
  server_log_id   bigint    REFERENCES server_logs(id),
  offload_mode    text,
  CONSTRAINT benchmark_results_identity UNIQUE NULLS NOT DISTINCT
    (workflow_run_id, config_id, benchmark_type, isl, osl, conc, offload_mode)
);
CREATE INDEX benchmark_results_run_id_idx ON benchmark_results (workflow_run_id);
CREATE INDEX benchmark_results_config_ts_idx ON benchmark_results (config_id, conc, isl, osl, date DESC)
  WHERE error IS NULL;

CREATE TABLE eval_results (
  id              bigserial PRIMARY KEY,
  workflow_run_id bigint    NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  config_id       integer   NOT NULL REFERENCES configs(id),
  task            text      NOT NULL CHECK (task = lower(task)),
  date            date      NOT NULL,
  isl             integer,
  osl             integer,
  conc            integer,
  lm_eval_version text,
  metrics         jsonb     NOT NULL,
  CONSTRAINT eval_results_identity UNIQUE NULLS NOT DISTINCT
    (workflow_run_id, config_id, task, isl, osl, conc)
);
CREATE INDEX eval_results_config_id_idx ON eval_results (config_id);

CREATE TABLE servebench_runs (
  workflow_run_id    bigint PRIMARY KEY REFERENCES workflow_runs(id) ON DELETE CASCADE,
  token              text   NOT NULL UNIQUE,
  created_at         text   NOT NULL,
  finished_at        text,
  kind               text   NOT NULL CHECK (kind IN ('sweep','bench','eval','baseline')),
  status             text   NOT NULL
                            CHECK (status IN ('running','ok','partial','failed','interrupted')),
  label              text,
  endpoint           text,
  image              text,
  index_digest       text,
  platform_digest    text,
  config_key         text,
  topology           text,
  workload           text,
  servebench_version text   NOT NULL,
  out_dir            text,
  meta_json          text   NOT NULL DEFAULT '{}',
  invalid_reason     text
);
CREATE INDEX servebench_runs_kind ON servebench_runs (kind, workflow_run_id);

CREATE TABLE servebench_points (
  id                  bigserial PRIMARY KEY,
  workflow_run_id     bigint NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  benchmark_result_id bigint NOT NULL REFERENCES benchmark_results(id) ON DELETE CASCADE,
  token               text   NOT NULL UNIQUE,
  created_at          text   NOT NULL,
  status              text   NOT NULL,
  hw                  text,
  records_file        text,
  invalid_reason      text,
  row_json            text   NOT NULL
);
CREATE INDEX servebench_points_run ON servebench_points (workflow_run_id, id);
CREATE INDEX servebench_points_result ON servebench_points (benchmark_result_id);

CREATE TABLE servebench_evals (
  id              bigserial PRIMARY KEY,
  workflow_run_id bigint NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  eval_result_id  bigint NOT NULL REFERENCES eval_results(id) ON DELETE CASCADE,
  token           text   NOT NULL UNIQUE,
  created_at      text   NOT NULL,
  task            text   NOT NULL,
  score_name      text,
  conc            bigint,
  score           double precision,
  n_eff           bigint,
  row_json        text   NOT NULL
);
CREATE INDEX servebench_evals_run ON servebench_evals (workflow_run_id, id);

CREATE TABLE servebench_provenance (
  workflow_run_id bigint NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  key             text   NOT NULL,
  value           text   NOT NULL,
  PRIMARY KEY (workflow_run_id, key)
);

CREATE TABLE servebench_image_provenance (
  id                    bigserial PRIMARY KEY,
  recorded_at           text NOT NULL,
  image                 text NOT NULL,
  role                  text CHECK (role IS NULL OR role IN ('old','new')),
  config_key            text,
  index_digest          text,
  platform_digests_json text NOT NULL DEFAULT '{}',
  labels_json           text NOT NULL DEFAULT '{}',
  image_created         text,
  source                text NOT NULL,
  change_json           text NOT NULL DEFAULT '{}'
);
CREATE INDEX servebench_image_provenance_image ON servebench_image_provenance (image, id);
"#,
    // 1 → 2: a point's GPU energy in servebench_points' columns (issue 30; `crate::energy`),
    // filled from the stored row; a modelled point's energy numbers leave InferenceX's
    // `metrics` (numbers there are measured and valid, as aggregate_power.py writes them).
    r#"
ALTER TABLE servebench_points
  ADD COLUMN power_source            text,
  ADD COLUMN power_valid             smallint,
  ADD COLUMN avg_power_w             double precision,
  ADD COLUMN total_gpu_energy_j      double precision,
  ADD COLUMN joules_per_output_token double precision,
  ADD COLUMN joules_per_total_token  double precision;
UPDATE servebench_points p SET
  power_source            = j.v->>'power_source',
  power_valid             = CASE jsonb_typeof(j.v->'power_valid')
                              WHEN 'boolean' THEN (j.v->>'power_valid')::boolean::int
                              WHEN 'number' THEN ((j.v->>'power_valid')::numeric <> 0)::int END,
  avg_power_w             = CASE jsonb_typeof(j.v->'avg_power_w')
                              WHEN 'number' THEN (j.v->>'avg_power_w')::float8 END,
  total_gpu_energy_j      = CASE jsonb_typeof(j.v->'total_gpu_energy_j')
                              WHEN 'number' THEN (j.v->>'total_gpu_energy_j')::float8 END,
  joules_per_output_token = CASE jsonb_typeof(j.v->'joules_per_output_token')
                              WHEN 'number' THEN (j.v->>'joules_per_output_token')::float8 END,
  joules_per_total_token  = CASE jsonb_typeof(j.v->'joules_per_total_token')
                              WHEN 'number' THEN (j.v->>'joules_per_total_token')::float8 END
FROM (SELECT id, row_json::jsonb AS v FROM servebench_points) j
WHERE j.id = p.id AND j.v ?| array['power_valid', 'power_source'];
UPDATE benchmark_results b
  SET metrics = b.metrics - ARRAY['avg_power_w', 'avg_total_gpu_power_w', 'total_gpu_energy_j',
    'joules_per_successful_query', 'joules_per_input_token', 'joules_per_output_token',
    'joules_per_total_token']
  FROM servebench_points p
  WHERE p.benchmark_result_id = b.id AND p.power_source = 'modelled';
CREATE INDEX servebench_points_energy
  ON servebench_points (power_source, joules_per_output_token);
"#,
];
