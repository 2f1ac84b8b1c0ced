{#- on-run-start. Checks the declaration of every selected model before anything runs: its kind
    (check_framework_declaration: a half-declared model, naming what is missing) and, for a
    model that declares config.meta.backfill_safe, the whole declaration (declared_model: keys,
    lookback, current state, the columns its event date, measures and scope name, its scope's
    sources), so a typo stops the run with the model and the key named instead of surfacing in a
    test or the on-run-end hook after the models built. Then,
    when the invocation selects a model of the framework's kind or a test of one, creates the
    control tables (ensure_control_tables), installs the listener that tells record_scans the
    partitions each statement planned (install_scan_partitions), makes the scratch schema and
    lists the change records, once for all the models that stage and record. A run of plain dbt models only sends no statement:
    the framework stays out of the way of a team's other models. -#}
{% macro prepare_framework_run() %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% set needed = [] %}
    {% for unique_id in selected_resources %}
        {% set node = graph.nodes.get(unique_id) %}
        {% if node is not none and node.resource_type == 'model' %}
            {% if (node.config.meta or {}).get('backfill_safe') is not none
                or node.config.materialized == 'backfill_safe' %}
                {% do backfill_safe.declared_model(node) %}  {#- its kind checked first -#}
            {% else %}
                {% do backfill_safe.check_framework_declaration(node) %}
            {% endif %}
            {% if backfill_safe.is_framework_model(node) %}
                {% do needed.append(unique_id) %}
            {% endif %}
        {% elif node is not none and node.resource_type == 'test' %}
            {% for parent in node.depends_on.nodes
                if graph.nodes.get(parent) is not none and backfill_safe.is_framework_model(graph.nodes[parent]) %}
                {% do needed.append(parent) %}
            {% endfor %}
        {% endif %}
    {% endfor %}
    {% if needed %}
        {% do backfill_safe.ensure_control_tables() %}
        {% do backfill_safe.install_scan_partitions() %}
        {#- once for every model of the invocation: the schema their runs stage their rows to
            merge in (stage_merge_source), and the listing of the change records
            (recorded_change_tables), which the facts that record and the models over models
            read -#}
        {% do backfill_safe.ensure_scratch_schema() %}
        {% if backfill_safe.run_mode().window is none %}
            {#- a backfill's control schema is the runner's to make (ensure_control_tables) -#}
            {% do backfill_safe.recorded_change_tables() %}
        {% endif %}
    {% endif %}
    {{ return('') }}
{% endmacro %}


{#- The driver's listener of the partitions each statement's Iceberg scans planned
    (backfill_safe.ScanPartitions, read by record_scans through ScanLog), installed once per
    driver. Nothing without var record_scans, nor when the class is not on the driver's class
    path (record_scans then says so). -#}
{% macro install_scan_partitions() %}
    {% if not execute or not var('record_scans', true) %}
        {{ return('') }}
    {% endif %}
    {% set found = run_query("select reflect('java.lang.ClassLoader', 'getSystemResource',"
        ~ " 'backfill_safe/ScanPartitions.class') from values (1)").rows[0][0] %}
    {% if found is not none %}
        {% set installed = run_query("select java_method('backfill_safe.ScanPartitions',"
            ~ " 'install') from values (1)").rows[0][0] %}
        {% if installed != 'installed' %}
            {% do log("record_scans: partitions will not be recorded: " ~ installed, info=true) %}
        {% endif %}
    {% endif %}
{% endmacro %}
