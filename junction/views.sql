-- Junction warehouse views over the Parquet traces.
-- Placeholders {traces}, {timings} and {runs} are replaced by quoted file globs at refresh;
-- {metric_aggregates} by one aggregate per metric of the catalog (junction.metrics.METRICS).
-- Files are read by column name (union_by_name), so a column added in a later schema
-- version does not break older runs: it reads as NULL there.

CREATE OR REPLACE VIEW traces AS
SELECT *
FROM read_parquet({traces}, union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW timings AS
SELECT *
FROM read_parquet({timings}, union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW runs AS
SELECT run_id, git_commit, git_dirty, started_at, finished_at, status, params_hash,
       CAST(params AS VARCHAR) AS params_json
FROM read_json({runs}, union_by_name = true, format = 'auto');

-- One row per run, suite, strategy and budget scale: the report's table.
CREATE OR REPLACE VIEW strategy_summary AS
SELECT run_id, suite, strategy, budget_scale,
       count(*) AS tasks,
       {metric_aggregates}
FROM traces
GROUP BY run_id, suite, strategy, budget_scale;
