{#- on-run-end, after record_runs: what each model run of this invocation read, per table, in
    control.run_scans (created by ensure_control_tables; the backfill runner creates it too).
    The figures are Spark's and Iceberg's own for every scan of a table in the model's
    statements (data files left after the pushed filters and skipped by them, manifests, bytes,
    file splits and rows read), from the driver's SQL status store (backfill_safe.ScanLog, a
    class of the framework's jar on the driver's class path). A statement belongs to the model
    whose compilation or execution (dbt's timings: a model's compile-time probes are its reads
    too) spans its submission, and, when dbt's query comment is its description (a Thrift
    Server), that names it; a statement two model runs span (threads > 1) belongs to neither.
    Only tables `schema.table` outside the control schema count: metadata tables and the
    framework's own bookkeeping (which other threads of the backfill runner read meanwhile) are
    not the model's reads. A scan adaptive execution found empty and took out of the plan (a
    MERGE whose key literals no file's statistics admit) read nothing and is not listed.
    `partitions_planned` and `partitions`: the distinct partitions the model's statements planned
    for the table (backfill_safe.ScanPartitions, a listener install_scan_partitions puts on the
    driver: Spark's scan metrics count files only); null for an unpartitioned table, or when a
    statement's partitions are unknown (no listener). `table_data_files` (the model's own table only) is its data file count in the snapshot
    current on main when the model started, so `largest_scan_files / table_data_files` is the
    share of the table one read took: a daily run whose filter stopped pruning reads all of it.
    A model of the kind whose max_scan_share (config.meta.backfill_safe, else var
    max_scan_share) its daily run exceeded gets `over_share` and a warning here (an error under
    --warn-error). Backfill windows are recorded too (window_start/window_end). Nothing for a
    dual run's scratch build, for an invocation that ran no model of the kind, or with var
    record_scans false; under `pipeline explain` (var explain_next_run) the figures are written to
    dbt's log for it (`backfill_safe explain {"reads": ...}`), not recorded; when the figures cannot be read (no class on the driver's class path,
    no table, an error) a log line says so and the run goes on. Cost: one statement to find the
    class, one to read the log, one append (which also reads the targets' snapshot metadata). -#}
{% macro record_scans(results) %}
    {% if not execute or backfill_safe.run_mode().dual_run_model is not none %}
        {{ return('') }}
    {% endif %}
    {% set runs = [] %}
    {% set any_framework = namespace(found=false) %}
    {% for run in results if run.node.resource_type == 'model' %}
        {#- compile (its run_query probes) and execute -#}
        {% set starts = run.timing | map(attribute='started_at') | select | list %}
        {% set ends = run.timing | map(attribute='completed_at') | select | list %}
        {% if starts and ends %}
            {% do runs.append({'run': run, 'start': backfill_safe.epoch_ms(starts | min),
                               'end': backfill_safe.epoch_ms(ends | max),
                               'started_at': starts | min}) %}
        {% endif %}
        {% set any_framework.found = any_framework.found
            or backfill_safe.is_framework_model(run.node) %}
    {% endfor %}
    {% if not any_framework.found or not runs %}
        {{ return('') }}
    {% endif %}
    {% set control_schema = var('control_schema', 'control') %}
    {% if not var('record_scans', true) %}
        {% do backfill_safe.scans_unrecorded("var record_scans is false") %}
        {{ return('') }}
    {% endif %}
    {% if adapter.get_relation(database=none, schema=control_schema,
                               identifier='run_scans') is none %}
        {#- a backfill's vars skip ensure_control_tables (the runner makes the table) -#}
        {% do backfill_safe.scans_unrecorded(control_schema ~ ".run_scans does not exist (a daily "
            ~ "run of the framework's models, or `dbt run-operation ensure_control_tables`, makes it)") %}
        {{ return('') }}
    {% endif %}
    {% set found = run_query("select reflect('java.lang.ClassLoader', 'getSystemResource',"
        ~ " 'backfill_safe/ScanLog.class') from values (1)").rows[0][0] %}
    {% if found is none %}
        {% do backfill_safe.scans_unrecorded("the class backfill_safe.ScanLog is not on the Spark "
            ~ "driver's class path (the framework's jar, which scripts/bootstrap.sh builds; "
            ~ "spark.driver.extraClassPath)") %}
        {{ return('') }}
    {% endif %}
    {% set since = backfill_safe.epoch_ms(run_started_at) %}
    {% set log_json = fromjson(run_query("select java_method('backfill_safe.ScanLog', 'since', '"
        ~ since ~ "') from values (1)").rows[0][0]) %}
    {% if log_json.get('error') %}
        {% do backfill_safe.scans_unrecorded(log_json.error) %}
        {{ return('') }}
    {% endif %}
    {% if (log_json.first_execution or 0) > 0 and log_json.oldest is not none
        and log_json.oldest > since %}
        {% do log("record_scans: Spark no longer holds the first statements of this run "
            ~ "(spark.sql.ui.retainedExecutions): the figures below are incomplete", info=true) %}
    {% endif %}
    {#- 1. each scan of a table to its model run -#}
    {% set figures = {} %}
    {% set ambiguous = namespace(n=0) %}
    {% for scan in log_json.scans if modules.re.fullmatch(
            '[A-Za-z_][A-Za-z0-9_]*[.][A-Za-z_][A-Za-z0-9_]*', scan.table)
        and scan.table.split('.')[0] | lower != control_schema | lower %}
        {% set spanning = [] %}
        {% for entry in runs if entry.start <= scan.submitted <= entry.end
            and (not scan.node_id or scan.node_id == entry.run.node.unique_id) %}
            {% do spanning.append(entry) %}
        {% endfor %}
        {% if spanning | length > 1 %}
            {% set ambiguous.n = ambiguous.n + 1 %}
        {% elif spanning %}
            {% set owner = spanning[0] %}
            {% set key = (owner.run.node.unique_id, scan.table | lower, scan.branch or '') %}
            {% set figure = figures.setdefault(key, {
                'entry': owner, 'table': scan.table | lower, 'branch': scan.branch,
                'iceberg': scan.iceberg, 'statements': [], 'scans': 0, 'planned': 0,
                'skipped': 0, 'largest': 0, 'manifests_scanned': 0, 'manifests_skipped': 0,
                'bytes': 0, 'splits': 0, 'rows': 0, 'delete_files': 0, 'filters': [],
                'partitions': [], 'partitions_known': true}) %}
            {% set m = scan.metrics %}
            {% set planned = m.get('number of result data files', 0) %}
            {% if scan.execution not in figure.statements %}
                {% do figure.statements.append(scan.execution) %}
            {% endif %}
            {% do figure.update({
                'scans': figure.scans + 1,
                'planned': figure.planned + planned,
                'skipped': figure.skipped + m.get('number of skipped data files', 0),
                'largest': [figure.largest, planned] | max,
                'manifests_scanned': figure.manifests_scanned
                    + m.get('number of scanned data manifests', 0),
                'manifests_skipped': figure.manifests_skipped
                    + m.get('number of skipped data manifests', 0),
                'bytes': figure.bytes + m.get('total data file size (bytes)', 0),
                'splits': figure.splits + m.get('number of file splits read', 0),
                'rows': figure.rows + m.get('number of output rows', 0),
                'delete_files': figure.delete_files + m.get('number of result delete files', 0)}) %}
            {#- the partition paths the statement planned for the table (ScanPartitions) -#}
            {% if scan.partitions is none %}
                {% do figure.update({'partitions_known': false}) %}
            {% else %}
                {% for partition in scan.partitions if partition not in figure.partitions %}
                    {% do figure.partitions.append(partition) %}
                {% endfor %}
            {% endif %}
            {% set filters = (scan.filters or '') ~ ((' | runtime: ' ~ scan.runtime_filters)
                if scan.runtime_filters else '') %}
            {% if filters and filters not in figure.filters %}
                {% do figure.filters.append(filters) %}
            {% endif %}
        {% endif %}
    {% endfor %}
    {% if ambiguous.n %}
        {% do log("record_scans: " ~ ambiguous.n ~ " scans ran while two model runs did "
            ~ "(threads > 1): given to neither", info=true) %}
    {% endif %}
    {#- `pipeline explain`: the reads its compile and staging made, the run's own before its
        MERGE, are told to it (dbt's log), not recorded as a run -#}
    {% if backfill_safe.run_mode().explaining %}
        {% for f in figures.values() %}
            {% do log("backfill_safe explain " ~ tojson({'reads': {
                'model': f.entry.run.node.name, 'table': f.table, 'iceberg': f.iceberg,
                'scans': f.scans, 'planned': f.planned, 'largest': f.largest, 'rows': f.rows,
                'filters': f.filters}}), info=true) %}
        {% endfor %}
        {{ return('') }}
    {% endif %}
    {% if figures | length == 0 %}
        {{ return('') }}
    {% endif %}
    {#- 2. one append; the target's file count on main when its model started, from Iceberg's
        metadata tables, joined in the same statement -#}
    {% set window = backfill_safe.run_mode().window %}
    {% set rows = [] %}
    {% set counts = [] %}
    {% set counted = [] %}
    {% set declaring = namespace(any=false) %}
    {% for key, f in figures.items() %}
        {% set node = f.entry.run.node %}
        {% set relation = (node.schema ~ '.' ~ node.alias) | lower %}
        {% set role = 'target' if f.table == relation else 'source' %}
        {% set declared = backfill_safe.max_scan_share(node)
            if backfill_safe.is_framework_model(node) else none %}
        {% set declaring.any = declaring.any or declared is not none %}
        {% do rows.append("('" ~ invocation_id ~ "', " ~ backfill_safe.sql_literal(node.name)
            ~ ", " ~ backfill_safe.sql_literal(f.table) ~ ", "
            ~ backfill_safe.sql_literal(f.branch) ~ ", '" ~ role ~ "', "
            ~ (("date'" ~ window.start ~ "'") if window else 'null') ~ ", "
            ~ (("date'" ~ window.end ~ "'") if window else 'null') ~ ", "
            ~ f.statements | length ~ ", " ~ f.scans ~ ", " ~ f.planned ~ ", " ~ f.skipped ~ ", "
            ~ f.largest ~ ", " ~ f.manifests_scanned ~ ", " ~ f.manifests_skipped ~ ", "
            ~ f.bytes ~ ", " ~ f.splits ~ ", " ~ f.rows ~ ", " ~ f.delete_files ~ ", "
            ~ (declared if declared is not none else 'null') ~ ", "
            ~ backfill_safe.sql_literal((f.filters | join(' || ') | truncate(2000)) or none)
            ~ ", " ~ backfill_safe.timestamp_literal(f.entry.started_at) ~ ", "
            ~ ((f.partitions | length) if f.partitions_known else 'null') ~ ", "
            ~ backfill_safe.sql_literal((f.partitions | sort | join(', ') | truncate(2000))
                if f.partitions_known else none) ~ ")") %}
        {% if role == 'target' and f.iceberg and f.table not in counted %}
            {% do counted.append(f.table) %}
            {% do counts.append("select " ~ backfill_safe.sql_literal(f.table)
                ~ " as table_name, cast(s.summary['total-data-files'] as bigint) as files"
                ~ " from " ~ f.table ~ ".snapshots s join (select snapshot_id from " ~ f.table
                ~ ".history where made_current_at <= "
                ~ backfill_safe.timestamp_literal(f.entry.started_at)
                ~ " order by made_current_at desc limit 1) h on s.snapshot_id = h.snapshot_id") %}
        {% endif %}
    {% endfor %}
    {% call statement('record_scans') %}
        insert into {{ control_schema }}.run_scans
        select
            v.invocation_id, v.model_name, v.table_name, v.branch, v.role, v.window_start,
            v.window_end, v.statements, v.scans, v.data_files_planned, v.data_files_skipped,
            v.largest_scan_files, c.files as table_data_files, v.data_manifests_scanned,
            v.data_manifests_skipped, v.bytes_planned, v.splits_read, v.rows_read,
            v.delete_files_planned, v.max_scan_share,
            {#- the alert's one rule: a daily read of the model's own table beyond its share -#}
            coalesce(v.window_start is null and v.role = 'target' and c.files > 0
                and v.largest_scan_files > v.max_scan_share * c.files, false) as over_share,
            v.filters, v.started_at,
            current_timestamp() as recorded_at,
            v.partitions_planned, v.partitions
        from values
            {{ rows | join(',\n            ') }}
            as v(invocation_id, model_name, table_name, branch, role, window_start, window_end,
                statements, scans, data_files_planned, data_files_skipped, largest_scan_files,
                data_manifests_scanned, data_manifests_skipped, bytes_planned, splits_read,
                rows_read, delete_files_planned, max_scan_share, filters, started_at,
                partitions_planned, partitions)
        left join (
            {{ counts | join('\n            union all\n            ') if counts else
                "select cast(null as string) as table_name, cast(null as bigint) as files" }}
        ) c on v.role = 'target' and c.table_name = v.table_name
    {% endcall %}
    {#- 3. the alert: a daily run that read more of its own table than it declared -#}
    {% if window is none and declaring.any %}
        {% set over = run_query("select model_name, largest_scan_files, table_data_files,"
            ~ " max_scan_share from " ~ control_schema ~ ".run_scans"
            ~ " where invocation_id = '" ~ invocation_id ~ "' and over_share") %}
        {% for row in over.rows %}
            {% do exceptions.warn("record_scans: " ~ row[0] ~ " read " ~ row[1] ~ " of its table's "
                ~ row[2] ~ " data files in one scan, more than its declared max_scan_share "
                ~ row[3] ~ ": has its incremental filter stopped pruning?") %}
        {% endfor %}
    {% endif %}
    {{ return('') }}
{% endmacro %}


{#- A datetime (aware, or naive UTC as dbt's timings are) as milliseconds since the epoch. -#}
{% macro epoch_ms(value) %}
    {% set offset = value.utcoffset() or modules.datetime.timedelta(0) %}
    {% set naive = value.replace(tzinfo=none) - offset %}
    {{ return(((naive - modules.datetime.datetime(1970, 1, 1)).total_seconds() * 1000) | int) }}
{% endmacro %}


{#- The largest share of its own table's data files one read of `node`'s daily run may take:
    config.meta.backfill_safe.max_scan_share, else var max_scan_share, else none (no alert). A
    value that is not a number > 0 and <= 1 is a compiler error naming where it was declared. -#}
{% macro max_scan_share(node) %}
    {% set own = ((node.config.meta or {}).get('backfill_safe') or {}).get('max_scan_share') %}
    {% set share = own if own is not none else var('max_scan_share', none) %}
    {% set where = ("model " ~ node.name ~ " (" ~ node.original_file_path
        ~ "), config.meta.backfill_safe") if own is not none else "var 'max_scan_share'" %}
    {% if share is not none and (share is not number or share is sameas true
        or share is sameas false or share <= 0 or share > 1) %}
        {{ exceptions.raise_compiler_error(where ~ ": max_scan_share: the largest share of the "
            ~ "table's data files one read of a daily run may take, a number > 0 and <= 1 "
            ~ "(0.25 for a quarter); got " ~ share) }}
    {% endif %}
    {{ return(share) }}
{% endmacro %}


{#- record_scans recorded nothing, and says why in dbt's log; under `pipeline explain` it also
    tells the explain why it cannot show the reads that ran. -#}
{% macro scans_unrecorded(reason) %}
    {% do log("record_scans: what this run read was not recorded: " ~ reason, info=true) %}
    {% if backfill_safe.run_mode().explaining %}
        {% do log("backfill_safe explain " ~ tojson({'reads_unknown': reason}), info=true) %}
    {% endif %}
{% endmacro %}
