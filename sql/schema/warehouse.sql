-- The tables every warehouse has from its first open: what ingest writes, and the run's own records
-- (the tables a step creates when it first writes them: the other files of sql/schema/). Idempotent: run when a
-- connection opens and this file changed since it last ran on the warehouse (analysis.warehouse).
-- Every raw table carries (file, line_no): where the row came from.
CREATE TABLE IF NOT EXISTS ingested_files (
    path VARCHAR PRIMARY KEY,      -- absolute path of the file
    source VARCHAR,                -- slurm, kernel, switch, ... (NULL: unrecognised)
    format VARCHAR,                -- detected format (e.g. 'sacct|', 'journal-short-iso')
    sha256 VARCHAR,                -- of the decompressed content
    host_hint VARCHAR,             -- host named by the file's path (per-host logs)
    fingerprint VARCHAR,           -- of the options that change how the file parses (tz, boot time, ...)
    size_bytes BIGINT,
    lines BIGINT,                  -- physical lines read
    row_lines BIGINT,              -- lines that produced stored rows
    rows BIGINT,                   -- rows stored (all tables; one line may give several rows)
    rejects BIGINT,                -- lines rejected (see rejects)
    skipped BIGINT,                -- blank, header and comment lines
    merged BIGINT,                 -- continuation lines folded into an earlier line's row
    status VARCHAR,                -- ok | unrecognised | duplicate | error
    message VARCHAR,               -- file-level problems (truncated gzip, duplicate of ...)
    ingested_at TIMESTAMP
);
-- Added after the first release: file modification time (ns), so a nightly run skips unchanged files unread.
ALTER TABLE ingested_files ADD COLUMN IF NOT EXISTS mtime_ns BIGINT;
-- When the content was last read and found as stored (UTC): a stat match counts only for files older than this.
ALTER TABLE ingested_files ADD COLUMN IF NOT EXISTS verified_at TIMESTAMP;
CREATE TABLE IF NOT EXISTS rejects (
    source VARCHAR, file VARCHAR, line_no BIGINT, raw VARCHAR, reason VARCHAR
);
CREATE TABLE IF NOT EXISTS sacct_records (
    job_id VARCHAR,            -- JobID without step: '123', '123_4', '123_[1-3]', '123+1'
    job_id_raw VARCHAR,        -- JobIDRaw without step (unique per array task / het component)
    step_id VARCHAR,           -- NULL for the allocation; 'batch', 'extern', '0', ...
    array_job_id BIGINT, array_task_id BIGINT, array_task_spec VARCHAR, het_offset INTEGER,
    user_name VARCHAR, account VARCHAR, job_name VARCHAR, partition VARCHAR, qos VARCHAR,
    priority BIGINT, state VARCHAR, state_raw VARCHAR, cancelled_by VARCHAR,
    exit_code INTEGER, exit_signal INTEGER, reason VARCHAR,
    submit_time TIMESTAMP, eligible_time TIMESTAMP, start_time TIMESTAMP, end_time TIMESTAMP,
    elapsed_s BIGINT, n_nodes INTEGER, n_gpus INTEGER, alloc_tres VARCHAR,
    node_list VARCHAR, nodes VARCHAR[], restarts INTEGER, submit_line VARCHAR,
    file VARCHAR, line_no BIGINT
);
-- Added with fleets: sacct's Cluster field (the slurmdbd's cluster name) when the dump has it, else NULL.
ALTER TABLE sacct_records ADD COLUMN IF NOT EXISTS cluster VARCHAR;
CREATE TABLE IF NOT EXISTS node_state_periods (
    host VARCHAR, time_start TIMESTAMP, time_end TIMESTAMP, state VARCHAR,
    reason VARCHAR, user_name VARCHAR, file VARCHAR, line_no BIGINT
);
CREATE TABLE IF NOT EXISTS node_events (
    event_time TIMESTAMP,      -- UTC
    host VARCHAR,              -- the compute node the event is about
    source VARCHAR,            -- kernel | switch | health | slurm
    kind VARCHAR,              -- xid, pcie_aer, mem_ecc, mce, ib_link, filesystem, gsp, oom, segfault, link_down, ...
    code VARCHAR,              -- XID number, switch mnemonic, health check name, node state, ...
    severity VARCHAR,          -- syslog level or health severity as written
    message VARCHAR,           -- the log text after the header
    device VARCHAR,            -- PCI address, port, DIMM, ... when the line names one
    reporter VARCHAR,          -- who logged it: the host itself, or the switch for switch events
    file VARCHAR, line_no BIGINT
);
CREATE TABLE IF NOT EXISTS benchmark_results (
    run_time TIMESTAMP, host VARCHAR, benchmark VARCHAR, metric VARCHAR,
    rank INTEGER, size_bytes BIGINT, sample_idx INTEGER, value DOUBLE,
    file VARCHAR, line_no BIGINT
);
CREATE TABLE IF NOT EXISTS telemetry (
    time TIMESTAMP, host VARCHAR, metric VARCHAR, gpu INTEGER, value DOUBLE,
    file VARCHAR, line_no BIGINT
);
CREATE TABLE IF NOT EXISTS tickets (
    ticket_id VARCHAR, host VARCHAR, opened TIMESTAMP, closed TIMESTAMP,
    component VARCHAR, resolution VARCHAR, file VARCHAR, line_no BIGINT
);
CREATE TABLE IF NOT EXISTS topology (
    switch VARCHAR, port VARCHAR, port_key VARCHAR, host VARCHAR, hca VARCHAR,  -- port_key: normalised port name
    file VARCHAR, line_no BIGINT
);
-- Added with job logs: the host's address on the fabric (IPoIB), which NCCL names its peers by.
ALTER TABLE topology ADD COLUMN IF NOT EXISTS ip VARCHAR;
-- /etc/hosts-style files in topology/: address -> host (every name on the line that is a host).
CREATE TABLE IF NOT EXISTS host_addresses (ip VARCHAR, host VARCHAR, file VARCHAR, line_no BIGINT);
-- joblogs/: the lines of jobs' own output that matter (analysis/ingest/parsers/joblogs.py); the rest is skipped.
CREATE TABLE IF NOT EXISTS job_log_lines (
    job_id VARCHAR,            -- from the file name or folder (slurm-<jobid>.out)
    log_time TIMESTAMP,        -- UTC, when the line carries a time (NULL: most NCCL lines)
    host VARCHAR,              -- named by the line (NCCL/pdsh prefix, srun/slurmstepd), else NULL
    task INTEGER,              -- srun --label task id; srun_exit: one row per task the line names
    rank INTEGER,              -- [Rank N], [rankN]:, NCCL init rank, or the label
    kind VARCHAR,              -- watchdog_timeout, watchdog_position, peer_error, nccl_error, cuda_error, exception,
                               -- srun_exit, step_cancelled, nccl_init, rank_map, progress, nccl_warn,
                               -- elastic_failure (torchrun's ChildFailedError block, code = the field),
                               -- step_time (a training step a worker reports, code = the shape)
    code VARCHAR,              -- collective, error status, NCCL error name, exception class, exit code, iteration,
                               -- step line shape (torchtitan, deepspeed, deepspeed_throughput, nanogpt, tqdm/<total>)
    peer VARCHAR,              -- address or name of the peer a transport error names
    seq BIGINT, enqueued BIGINT, timeout_ms BIGINT,  -- watchdog: work sequence numbers and timeout
    message VARCHAR, file VARCHAR, line_no BIGINT
);
-- Added with torchrun logs: the worker's local rank ([default3]:, or a ChildFailedError entry's local_rank).
ALTER TABLE job_log_lines ADD COLUMN IF NOT EXISTS local_rank INTEGER;
-- Added with step times (issue 32): the training step a step_time or progress line reports and the seconds its
-- steps take there (printed, or derived from the worker's previous line of the same shape: steplines.py); NULL
-- for other kinds. Stragglers read the rows where step_seconds IS NOT NULL.
ALTER TABLE job_log_lines ADD COLUMN IF NOT EXISTS step BIGINT;
ALTER TABLE job_log_lines ADD COLUMN IF NOT EXISTS step_seconds DOUBLE;
-- Added with job logs: the job a node event comes from (job logs), and the peer it names.
ALTER TABLE node_events ADD COLUMN IF NOT EXISTS job_id VARCHAR;
ALTER TABLE node_events ADD COLUMN IF NOT EXISTS peer VARCHAR;
-- The report's one job-size bucket (Meta §III, Fig. 7: MTTF by job size, GPUs rounded up to the next multiple
-- of 8): every chart and table by size (goodput_losses, mttf_by_job_size, the runs' ETTR) uses it.
CREATE OR REPLACE MACRO size_bucket(n_gpus) AS (8 * ceil(greatest(n_gpus, 1) / 8.0))::BIGINT;
-- A node event written in an operator's own words, which the reason rules (taxonomy/reasons.yaml) read: a Slurm
-- drain/down reason, a repair ticket, a failing health check's message (a passing one says nothing wrong).
CREATE OR REPLACE MACRO operator_text(source, severity) AS
    source IN ('slurm', 'ticket')
    OR (source = 'health' AND lower(severity) IN ('critical', 'error', 'fail', 'failed', 'fatal', 'warning', 'warn',
                                                  'unhealthy', 'degraded'));
-- node_state_periods keeps every dump's rows (file, line_no: every line accounted for), but sacctmgr lists every
-- event overlapping the window asked for, so an event open across midnight is in two daily dumps.
-- slurm_node_states: each event once (same host, start, state and reason), from the record that knows its end,
-- else the newest dump. node_states is Slurm's and Kubernetes' cordons together (k8s_node_states): whatever
-- counts or times node states reads it, never the raw table. sql/schema/k8s_objects.sql, run right after this
-- file, defines it over both; the one here (Slurm's alone) is what the macro below binds to when it is created.
CREATE OR REPLACE VIEW slurm_node_states AS
SELECT p.* FROM node_state_periods p LEFT JOIN ingested_files f ON f.path = p.file
QUALIFY row_number() OVER (PARTITION BY p.host, p.time_start, p.state, p.reason
                           ORDER BY p.time_end IS NULL, f.mtime_ns DESC NULLS LAST, p.file DESC, p.line_no) = 1;
CREATE OR REPLACE VIEW node_states AS SELECT * FROM slurm_node_states;
-- Nodes drained or down at the end of a day, with the state and reason Slurm recorded last: the one rule the
-- report's card, its top-nodes table and ad-hoc SQL share (SELECT * FROM nodes_out_of_service(DATE '2024-03-01')).
CREATE OR REPLACE MACRO nodes_out_of_service(day) AS TABLE
    SELECT host, arg_max(state, time_start) AS state, arg_max(reason, time_start) AS reason FROM node_states
    WHERE time_start <= day::TIMESTAMP + INTERVAL 1 DAY
      AND (time_end IS NULL OR time_end > day::TIMESTAMP + INTERVAL 1 DAY)
      AND (state LIKE '%DRAIN%' OR state LIKE 'DOWN%')
    GROUP BY host;
-- When each source's data begins and ends (its records' own times, UTC): the report's day is the last day any
-- source has data, and where sources end on different days the report says which ends when. A node-history
-- source (sacctmgr events, tickets) can run long after the last job, and its days are judged too.
CREATE OR REPLACE VIEW source_spans AS
SELECT * FROM (
    SELECT 'slurm' AS source, min(coalesce(start_time, submit_time)) AS first_time,
           max(coalesce(end_time, start_time, submit_time)) AS last_time FROM sacct_records
    UNION ALL SELECT 'slurm_events', min(time_start), max(greatest(time_start, time_end)) FROM node_state_periods
    UNION ALL SELECT source, min(event_time), max(event_time) FROM node_events
              WHERE source NOT IN ('slurm', 'app', 'telemetry', 'network', 'ticket') GROUP BY source
    UNION ALL SELECT 'tickets', min(opened), max(greatest(opened, closed)) FROM tickets
    UNION ALL SELECT 'benchmarks', min(run_time), max(run_time) FROM benchmark_results
    UNION ALL SELECT 'telemetry', min(time), max(time) FROM telemetry
) WHERE last_time IS NOT NULL;
-- Validation runs, as the benchmark criteria read them (sql/criteria/samples.sql): a run is the folder a results
-- file sits in under benchmarks/ (SuperBench writes one results-summary.jsonl per run; the simulator one folder per
-- weekly run), or the file itself when it sits directly in benchmarks/. Its time is the earliest timestamp its
-- results carry (or the benchmark_run_times option gave), else its files' modification time (dated_by_mtime: a
-- copy that did not keep modification times dates such a run on the day of the copy).
CREATE OR REPLACE MACRO benchmark_run_files() AS TABLE
    SELECT path AS file,
           CASE WHEN regexp_extract(path, '([^/]+)/[^/]+$', 1) = 'benchmarks' THEN regexp_extract(path, '([^/]+)$', 1)
                ELSE regexp_extract(path, '([^/]+)/[^/]+$', 1) END AS run_id,
           make_timestamp(mtime_ns // 1000) AS file_time
    FROM ingested_files WHERE source = 'benchmarks';
CREATE OR REPLACE MACRO benchmark_runs() AS TABLE
    SELECT f.run_id, coalesce(min(b.run_time), min(f.file_time)) AS run_time, min(b.run_time) IS NULL AS dated_by_mtime
    FROM benchmark_run_files() f JOIN benchmark_results b USING (file) GROUP BY f.run_id;
-- Steps that did not run to the end (crashed on odd input, or stopped by a blocking check): each keeps its
-- previous contents, and the report's data-health banner and the run summary name it until it runs again.
CREATE TABLE IF NOT EXISTS withheld_steps (
    step VARCHAR PRIMARY KEY, reason VARCHAR, missing VARCHAR, trace VARCHAR, since TIMESTAMP
);
-- What each step was last built from (analysis/fingerprints.py): a step whose inputs (its upstream steps' output
-- versions, settings, the files they name, the code) hash to the stored fingerprint is not rebuilt. A check keeps
-- its last outcome here (step 'asset:check'), replayed while its asset is unchanged. `goodput run --rebuild` empties it.
CREATE TABLE IF NOT EXISTS asset_inputs (
    asset VARCHAR PRIMARY KEY, fingerprint VARCHAR, output_version VARCHAR, outcome VARCHAR, built_at TIMESTAMP
);
-- Each outage of a switch port: the first link_down (oper, carrier or admin) of a run of downs, paired with the
-- first link_up (oper or admin) of the same port on the same switch after it; up_time NULL while it is still down.
CREATE OR REPLACE VIEW link_outages AS
WITH downs AS (
    SELECT reporter, device, host, event_time, file, line_no FROM node_events
    WHERE source = 'switch' AND kind = 'link_down' AND device IS NOT NULL
), ups AS (
    SELECT reporter, device, event_time FROM node_events WHERE source = 'switch' AND kind = 'link_up' AND device IS NOT NULL
), paired AS (
    SELECT d.*, u.event_time AS up_time FROM downs d
    ASOF LEFT JOIN ups u ON d.reporter = u.reporter AND d.device = u.device AND u.event_time >= d.event_time
)
SELECT reporter AS switch, device AS port, arg_min(host, (event_time, line_no)) AS host,
       min(event_time) AS down_time, up_time, epoch(up_time - min(event_time)) AS outage_s, count(*) AS down_lines,
       arg_min(file, (event_time, line_no)) AS file, arg_min(line_no, (event_time, line_no)) AS line_no
FROM paired GROUP BY reporter, device, up_time;
-- Derived tables rebuilt in part (analysis/derive/jobs.py): what of their source each build had read. A later
-- build that finds those files unchanged reads only the files ingested since; else it rebuilds all.
CREATE TABLE IF NOT EXISTS derived_marks (
    step VARCHAR PRIMARY KEY,     -- the derived table (jobs)
    files BIGINT,                 -- source files read (status ok) when it was built
    ingested_through TIMESTAMP    -- the newest of their ingested_at
);
-- The newest reading a build covered (port_counter_events: new readings after it extend the build).
ALTER TABLE derived_marks ADD COLUMN IF NOT EXISTS data_through TIMESTAMP;
-- The digest of this file when it last ran on this warehouse (analysis.warehouse._ensure_schema).
CREATE TABLE IF NOT EXISTS goodput_schema (digest VARCHAR);
-- The cluster this warehouse holds (analysis/fleet/identity.py): one row once a run named it (`goodput run
-- --cluster`, `--fleet`); a run for another cluster is refused, so two clusters' hosts never share a warehouse.
CREATE TABLE IF NOT EXISTS warehouse_cluster (cluster VARCHAR NOT NULL);
