{#- The current state the framework keeps for a model of the kind that names none and reads
    several inputs (declared_model: current_state_maintained): the view
    `<schema>.<alias>__current_state` of the model's own select (`body`, as dbt compiled it),
    which the audit, the reconciliation tests, restate and the status read as every key's row
    as it should be now. The team writes its mart's SQL once; this is the same SQL, unscoped
    (a select that calls scope_keys() names its current state instead: declared_model). Made on
    the model's first build and made again only when the select's SQL changed, or on
    --full-refresh: the view carries the md5 of its statement as spark__create_view_as' views
    do, read from dbt's relation cache (no statement when unchanged). Nothing in a backfill's
    window (a view is not on a branch: it follows the model's next daily run), a dual run's
    scratch build or `pipeline explain`. Returns the view's relation when this run made it (the
    materialization returns it, so dbt's relation cache holds it), else none. -#}
{% macro maintain_current_state(body) %}
    {% set plan = backfill_safe.run_plan() %}
    {% set declared = plan.declared %}
    {% if declared is none or not declared.get('current_state_maintained')
        or plan.window is not none or plan.dual_run_model is not none or plan.explaining %}
        {{ return(none) }}
    {% endif %}
    {% set relation = declared.current_state_relation %}
    {% set create = "create view " ~ relation
        ~ " comment 'the current state of model " ~ model.name
        ~ ": its select, unscoped (backfill_safe maintain_current_state)'" %}
    {#- a model over models: the table's columns plus is_deleted (flagged_rows), as its runs
        read the select -#}
    {% if declared.reads_models %}
        {% set body = backfill_safe.flagged_rows(body, model.columns.keys() | list) %}
    {% endif %}
    {% set fingerprint = local_md5(create ~ ' as ' ~ body) %}
    {% if backfill_safe.view_is_current(relation, fingerprint) %}
        {{ return(none) }}
    {% endif %}
    {% do backfill_safe.drop_view_to_replace(relation, body) %}
    {% call statement('maintain_current_state', fetch_result=false) %}
        {{ create }}
        tblproperties ('backfill_safe.view_md5' = '{{ fingerprint }}')
        as {{ body }}
    {% endcall %}
    {{ return(relation) }}
{% endmacro %}
