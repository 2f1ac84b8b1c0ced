{#- The keys a run of a model whose scope's changes are models (scope_model_changes) must
    recompute, as a SQL select of its scope key, or none when every key is (a full build or
    refresh, no recorded run yet, an upstream rebuilt since).
    - Daily: the upstream rows' `key` column values, as they were before and are after each run
      of every upstream model recorded since this model's landing bound (its last committed
      run's start, less the overlap margin: incremental_landed_bound): every run since, not
      only the last, whether or not this model ran in between (a failed run moves no bound).
    - Backfill: the values recorded by this invocation's runs of the upstream models (the
      same backfill restated them), and those recorded since this model's landing bound as
      above, so a model behind its upstream (skipped, failed or not selected since: the audit
      lists it 'behind') is brought up to date in the same publish, the gate checking it whole;
      the kind adds the window's keys. -#}
{% macro model_scope_keys_select(scope) %}
    {% if not backfill_safe.run_plan().incremental %}
        {{ return(none) }}
    {% endif %}
    {#- once per model and invocation: the select, the MERGE and the post-hook ask -#}
    {% set made = backfill_safe.invocation_store('model_scope_keys') %}
    {% if this.identifier not in made %}
        {% do made.update({this.identifier: backfill_safe.model_scope_keys_found(scope)}) %}
    {% endif %}
    {{ return(made[this.identifier]) }}
{% endmacro %}

{#- What model_scope_keys_select answers, found once per model and invocation. -#}
{% macro model_scope_keys_found(scope) %}
    {% set window = backfill_safe.run_plan().window %}
    {#- a backfill's too: the keys changed upstream since this model's last committed run, which
        it may not have reached (skipped, failed, not selected: behind, in the audit) -#}
    {% set bound_at = backfill_safe.incremental_landed_bound_at(
        this.identifier if window is not none else none) %}
    {% set bound = none if bound_at is none else backfill_safe.timestamp_literal(bound_at) %}
    {% if window is none and bound is none %}
        {{ return(none) }}
    {% endif %}
    {% set recorded = backfill_safe.recorded_change_tables() %}
    {#- one statement for every upstream: its rebuilds and its changed rows since the bound -#}
    {% set counted = {} %}
    {% set counts = [] %}
    {% for upstream in scope.models if bound is not none and upstream.changes | lower in recorded %}
        {% do counts.append("select '" ~ upstream.changes ~ "', count_if(_change = 'rebuilt'), "
            ~ "count_if(_change in ('old', 'new')) from " ~ upstream.changes
            ~ " where _run_started_at > " ~ bound) %}
    {% endfor %}
    {% for row in (run_query(counts | join('\nunion all\n')).rows if counts else []) %}
        {% do counted.update({row[0]: {'rebuilt': row[1], 'changed': row[2]}}) %}
    {% endfor %}
    {#- a daily run: whether its upstreams changed anything, for nothing_changed_upstream -#}
    {% if window is none %}
        {% do backfill_safe.invocation_store('upstream_changed_rows').update({this.identifier:
            counted.values() | sum(attribute='changed')}) %}
    {% endif %}
    {% set branches = [] %}
    {% for upstream in scope.models %}
        {% set changes = upstream.changes %}
        {% if changes | lower in recorded %}
            {% set since = none if bound is none else "_run_started_at > " ~ bound %}
            {% if since is not none %}
                {#- an upstream rebuilt since: every key (a backfill: its own keys only) -#}
                {% set rebuilt = counted[changes].rebuilt %}
                {% if rebuilt > 0 and window is none %}
                    {{ return(none) }}
                {% elif rebuilt > 0 %}
                    {% set since = none %}
                {% endif %}
            {% endif %}
            {% if window is not none %}
                {% set since = "_invocation_id = '" ~ invocation_id ~ "'"
                    ~ ((" or " ~ since) if since is not none else "") %}
            {% endif %}
            {% do branches.append("select " ~ upstream.column
                ~ ((" as " ~ scope.key) if upstream.column != scope.key else "") ~ " from "
                ~ changes ~ " where _change in ('old', 'new') and (" ~ since ~ ")") %}
        {% endif %}
    {% endfor %}
    {#- no upstream recorded anything yet: no key changed -#}
    {{ return(branches | join("\nunion\n") if branches
        else "select " ~ scope.key ~ " from " ~ this ~ " where false") }}
{% endmacro %}


{#- The change records that exist (model_changes_relation), as lower-case
    '<schema>.<table>' names: listed once per dbt invocation, and kept up to date by
    create_model_changes when a run of this invocation creates one. The models over models, the
    facts that record changes and the on-run-end audit all ask; one statement answers them. -#}
{% macro recorded_change_tables() %}
    {% set listed = backfill_safe.invocation_store('recorded_change_tables') %}
    {% if 'tables' not in listed %}
        {% set schema = var('control_schema', 'control') %}
        {% set found = [] %}
        {% for row in run_query("show tables in " ~ backfill_safe.validated_identifier(schema)
            ~ " like '*__changes'").rows %}
            {% do found.append((schema ~ '.' ~ row[1]) | lower) %}
        {% endfor %}
        {% do listed.update({'tables': found}) %}
    {% endif %}
    {{ return(listed['tables']) }}
{% endmacro %}


{#- True when a daily run of a model whose scope's changes are models can change nothing: no
    upstream recorded a change since its landing bound. False on a full build, a backfill, with
    no recorded run. -#}
{% macro nothing_changed_upstream(scope) %}
    {% if backfill_safe.run_plan().window is not none %}
        {{ return(false) }}
    {% endif %}
    {% set keys = backfill_safe.model_scope_keys_select(scope) %}
    {% if keys is none %}
        {{ return(false) }}
    {% endif %}
    {#- counted as the keys were found (model_scope_keys_found), in the same statement -#}
    {{ return(backfill_safe.invocation_store('upstream_changed_rows')[this.identifier] == 0) }}
{% endmacro %}


{#- The keys in this run's scope (`keys`, the cached subquery scope_keys_cached returned) as a
    list of SQL literals of the key's type, when there are at most var merge_scope_literals_max
    of them, else none. Literals, not a subquery: Iceberg prunes files at planning
    time only on values (through a select's grouping, Spark pushes them down to the upstream
    table's scan). A key the Thrift Server returns as text is cast back to the table's type. -#}
{% macro scope_key_literals(keys) %}
    {#- once per model and invocation: the select and the MERGE's two predicates ask -#}
    {% set made = backfill_safe.invocation_store('scope_key_literals') %}
    {% set asked = this ~ ' ' ~ keys %}
    {% if asked not in made %}
        {% do made.update({asked: backfill_safe.scope_key_literals_found(keys)}) %}
    {% endif %}
    {{ return(made[asked]) }}
{% endmacro %}

{#- What scope_key_literals answers, found once per model, keys and invocation. -#}
{% macro scope_key_literals_found(keys) %}
    {% set limit = var('merge_scope_literals_max', 20000) %}
    {% set key = backfill_safe.run_plan().scope.key %}
    {% set rows = backfill_safe.memoized_rows("select distinct " ~ key ~ " from (" ~ keys
        ~ ") as scoped where " ~ key ~ " is not null limit " ~ (limit + 1)) %}
    {% if rows | length > limit %}
        {{ return(none) }}
    {% endif %}
    {% if rows | length == 0 %}
        {{ return("null") }}
    {% endif %}
    {#- the key's type only when a value came back as text (a Thrift Server's): one describe -#}
    {% set data_type = (adapter.get_columns_in_relation(this)
        | selectattr('name', 'equalto', key) | map(attribute='data_type') | list
        + ['string'])[0] | lower if rows | map(attribute=0) | select('string') | list
        else 'string' %}
    {% set literals = [] %}
    {% for value in rows | map(attribute=0) | sort %}
        {% set literal = backfill_safe.sql_literal(value) %}
        {% if value is string and data_type != 'string' %}
            {% set literal = "cast(" ~ literal ~ " as " ~ data_type ~ ")" %}
        {% endif %}
        {% do literals.append(literal) %}
    {% endfor %}
    {{ return(literals | join(', ')) }}
{% endmacro %}
