-- Junction warehouse views over the Parquet traces.
-- Placeholders {traces} and {timings} are replaced by the list of readable files at refresh
-- (a corrupt file is left out and named in a warning);
-- {metric_aggregates} by one aggregate per metric of the catalog (junction.evidence.metrics.METRICS).
-- Files are read by column name (union_by_name), so a column added in a later schema
-- version does not break older runs: it reads as NULL there.
-- run_files is a table the warehouse fills from the run files (TraceStore.run_metas): one
-- row per runs/<run_id>.json, a missing or malformed field named in `problem`.

-- `success` is the retrieval proxy; the view also names it retrieval_success, beside the
-- agent's outcome (agent_success, NULL where no agent ran).
CREATE OR REPLACE VIEW traces AS
SELECT *, success AS retrieval_success
FROM read_parquet({traces}, union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW timings AS
SELECT *
FROM read_parquet({timings}, union_by_name = true, hive_partitioning = false);

-- One row per trace row and measure of its agent grader (junction.agent.grade.Measure):
-- the trace's agent_measures list in long form. A warehouse whose traces all predate the
-- column gets this view empty (the warehouse module fills it).
CREATE OR REPLACE VIEW agent_measures AS
SELECT run_id, suite, strategy, budget_scale, seed, task_id, agent_grader,
       m.name AS measure, m.value AS value
FROM (SELECT *, unnest(agent_measures) AS m FROM traces);

CREATE OR REPLACE VIEW runs AS
SELECT run_id, git_commit, git_dirty, started_at, finished_at, status, params_hash,
       params_json, problem
FROM run_files;

-- One row per run, suite, strategy and budget scale: the report's table.
CREATE OR REPLACE VIEW strategy_summary AS
SELECT run_id, suite, strategy, budget_scale,
       count(*) AS tasks,
       {metric_aggregates}
FROM traces
GROUP BY run_id, suite, strategy, budget_scale;
