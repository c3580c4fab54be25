"""The evidence half of a run: what was decided and what it shows.

- ``traces``: the versioned ``TaskTraceRecord`` schema (one row per task and strategy);
- ``store``: Parquet trace files, written atomically per unit;
- ``warehouse`` and ``views.sql``: DuckDB views over the store, and ``RunData``, what one
  run's report reads through them;
- ``metrics``: the metric catalog (what each metric is, its column, its direction);
- ``verdicts``: paired comparisons and the headline;
- ``reports``: ``write_report``, a run's metrics.json, run.json, report.md and report.html
  from its ``RunData``, every analysis computed once (``ReportSections``): ``summary`` (the
  trace rows summarised), ``metrics_json`` (what metrics.json holds), ``verdict_text`` (the
  headline in words), ``report_markdown`` (report.md), ``cost`` (time per strategy),
  ``page`` (the HTML page), ``plots``, ``calibration``, ``joint_split``, ``losses``
  (where retrieval success is lost), ``crossfit`` (the cross-fitted verdict),
  ``agent_tables`` (the agent's paired comparisons and window cuts) and ``agent_measures``
  (the agent graders' measures), their SQL in one DuckDB connection (``arrow_sql``);
- ``locks``: one writer per run (the run id's file lock) and the names safe in a path;
- ``diff``: the comparison of two runs.

The outcome half (what an agent did with the exposed set) is ``junction.agent``.
"""
