{#- The framework's declaration of an incremental model, from its config: the model's
    `unique_key`, and under config.meta.backfill_safe
      event_date:    the column of its event date (its partition column): the dates a
                     restatement rewrites, the grain of its reconciliation; optional for a
                     model whose scope names models of the kind (then restated by key)
      lookback:      its window in whole days, or a domain of var lookback_days (shared)
      current_state: (optional) the model that holds every key's row as it should be now,
                     with no incremental logic (every column of this model plus `is_deleted`);
                     left out, the view `<schema>.<alias>__current_state` of its own select
                     that the framework keeps (maintain_current_state; a select that calls
                     scope_keys() must name one)
      dimension:     (a dimension, instead of event_date, current_state, measures and scope)
                     its type and members (declared_dimension)
      reference:     true (a reference table, the only key: declared_reference): its select
                     gives every row on every run
      measures:      (optional) the columns whose daily sums reconcile it, e.g. [net_amount]
      additive:      (optional, a model over one model of the kind) the columns its select
                     computes as sum(...) or count(...) of that model's rows, one of them
                     count(*): a daily run applies the upstream's recorded changes to them as
                     deltas instead of recomputing the groups they reach (additive_deltas)
      scope:         (optional) how its rows are tied to its sources' versions, so a daily run
                     reads only the keys its changes reach (run_plan.scope)
      max_scan_share: (optional) the largest share of its table's data files one read of a
                     daily run may take (record_scans warns)
      restatement_window: (optional) how many days back from its watermark a late row is
                     restated without sign-off: whole days, or a key of var
                     restatement_window_days (restatement_window_days)
    Returned as {name, unique_id, relation, unique_key, event_date, lookback, current_state
    (a unique id, none when maintained), current_state_relation, current_state_maintained,
    measures, additive, scope, reads_models (its scope names models of the kind, landed sources beside
    them or not: its rows are recomputed whole, read through flagged_rows, no version guard),
    only_models (its changes are models of the kind alone: no lookback, no watermark of its
    own), max_scan_share, restatement_window (days)}. A
    declaration that is incomplete or names what does not exist is a compiler error naming the
    model and the key. `node` is a model node of the graph. -#}
{% macro declared_model(node) %}
    {% do backfill_safe.check_framework_declaration(node) %}
    {% set block = (node.config.meta or {}).get('backfill_safe') %}
    {% set where = "model " ~ node.name ~ " (" ~ node.original_file_path
        ~ "), config.meta.backfill_safe" %}
    {% if block is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ": a mapping with event_date and lookback "
            ~ "is required; got " ~ block) }}
    {% endif %}
    {% if 'dimension' in block %}
        {{ return(backfill_safe.declared_dimension(node, block, where)) }}
    {% endif %}
    {% if 'reference' in block %}
        {{ return(backfill_safe.declared_reference(node, block, where)) }}
    {% endif %}
    {% set known = ['event_date', 'lookback', 'current_state', 'measures', 'additive', 'scope',
                    'max_scan_share', 'restatement_window', 'dimension', 'reference'] %}
    {% for key in block.keys() if key not in known %}
        {{ exceptions.raise_compiler_error(where ~ ": unknown key '" ~ key ~ "' (keys: "
            ~ known | join(', ') ~ ")") }}
    {% endfor %}
    {% set current_state = block.get('current_state') %}
    {#- none declared: the framework keeps its current state, a view of the model's own select
        (maintain_current_state), which must then not restrict itself to a run's keys. Whatever
        the select reads: a select over one model may still rename, compute or filter, so that
        model is never taken for its current state -#}
    {% set maintained = current_state in [none, ''] %}
    {% if maintained and 'scope_keys(' in (node.raw_code or '') %}
        {{ exceptions.raise_compiler_error(where ~ ": 'current_state' is missing: a select that "
            ~ "restricts itself to a run's keys (scope_keys()) names the model that holds every "
            ~ "key's row as it should be now, with no incremental logic") }}
    {% endif %}
    {#- a model whose changes are only models of the kind has no lookback: its scope is what
        their runs changed (scope_model_changes); one that names landed sources beside them
        has one, their window (rule 1) -#}
    {% set only_models = block.get('scope') is mapping
        and backfill_safe.names_models(block.scope.get('changes'))
        and not backfill_safe.names_landed_sources(block.scope.get('changes')) %}
    {% if only_models and block.get('lookback') is not none %}
        {{ exceptions.raise_compiler_error(where ~ ": lookback: a model whose changes are models "
            ~ "of the kind has no lookback (its scope is the keys their runs changed); drop it") }}
    {% endif %}
    {#- a model whose scope names models of the kind may have no event date (a customer mart):
        its runs recompute the keys their changes reach, and a restatement the keys that
        differ from its select (rows_over_models) -#}
    {% set reads_models = block.get('scope') is mapping
        and backfill_safe.names_models(block.scope.get('changes')) %}
    {% for key in ([] if reads_models else ['event_date'])
        + ([] if only_models else ['lookback']) if block.get(key) in [none, ''] %}
        {{ exceptions.raise_compiler_error(where ~ ": '" ~ key ~ "' is missing") }}
    {% endfor %}
    {% if not only_models %}
        {% do backfill_safe.lookback_declaration(where, block.lookback) %}
    {% endif %}
    {% set share = backfill_safe.max_scan_share(node) %}
    {% set restatement_window = backfill_safe.restatement_window_days(where,
        block.get('restatement_window'), none if only_models else block.lookback, node.name) %}
    {% set unique_key = node.config.unique_key %}
    {% if unique_key is not string or not unique_key %}
        {{ exceptions.raise_compiler_error(where ~ ": the model needs one unique_key column in "
            ~ "its config; got " ~ unique_key) }}
    {% endif %}
    {% set documented = node.columns.keys() | list %}
    {% set measures = block.get('measures') or [] %}
    {% for column in [unique_key] + ([block.event_date] if block.get('event_date') else [])
        + measures if documented and column not in documented %}
        {{ exceptions.raise_compiler_error(where ~ ": column '" ~ column ~ "' is not among the "
            ~ "model's documented columns " ~ documented) }}
    {% endfor %}
    {#- a documented type of the event date is checked here, before anything runs (a table
        whose column is not a DATE is still refused after its full build: check_event_date_type) -#}
    {% set event_column = node.columns.get(block.get('event_date') or '') or {} %}
    {% set event_type = (event_column.get('data_type') or '')
        | string | trim | lower %}
    {% if event_type and event_type != 'date' %}
        {{ exceptions.raise_compiler_error(where ~ ": event_date '" ~ block.event_date ~ "' is "
            ~ "documented as " ~ event_type ~ "; it must be a DATE (restate, backfill windows "
            ~ "and the audit compare it with dates): cast it in the select, cast(... as date) as "
            ~ block.event_date ~ ", and document its data_type: date") }}
    {% endif %}
    {% if maintained %}
        {% set state = {'unique_id': none, 'database': node.database, 'schema': node.schema,
                        'alias': node.alias ~ '__current_state'} %}
    {% else %}
        {% set states = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
            | selectattr('name', 'equalto', current_state) | list %}
        {% if not states %}
            {{ exceptions.raise_compiler_error(where ~ ": current_state '" ~ current_state
                ~ "' is no model of the project") }}
        {% endif %}
        {% set state = states[0] %}
    {% endif %}
    {% set scope = backfill_safe.scope_declaration(where, block, unique_key) %}
    {% if scope is not none and documented and scope.key not in documented %}
        {{ exceptions.raise_compiler_error(where ~ ".scope: key '" ~ scope.key ~ "' is not among "
            ~ "the model's documented columns " ~ documented) }}
    {% endif %}
    {% if scope is not none %}
        {% do backfill_safe.check_inputs_tied(where ~ ".scope", node, scope) %}
    {% endif %}
    {% set additive = backfill_safe.additive_declaration(where, node, block.get('additive'),
        scope, only_models, documented) %}
    {#- an upstream model must be read by the select (dbt then runs it first), and must not read
        this model -#}
    {% for upstream in (scope.models if scope is not none else [])
        if upstream.unique_id not in backfill_safe.ancestors_of(node) %}
        {{ exceptions.raise_compiler_error(where ~ ".scope.changes: " ~ (("a cycle: model '"
            ~ upstream.name ~ "' reads this model") if upstream.unique_id == node.unique_id
            or node.unique_id in backfill_safe.ancestors_of(upstream.unique_id)
            else ("model '" ~ upstream.name ~ "' is not read by this model's select (ref it, "
            ~ "directly or through the models it reads)"))) }}
    {% endfor %}
    {{ return({
        'name': node.name,
        'unique_id': node.unique_id,
        'relation': api.Relation.create(database=node.database, schema=node.schema,
                                        identifier=node.alias, type='table'),
        'unique_key': unique_key,
        'event_date': block.get('event_date') or none,
        'lookback': block.get('lookback'),
        'current_state': state.unique_id,
        'current_state_relation': api.Relation.create(database=state.database,
            schema=state.schema, identifier=state.alias, type='view'),
        'current_state_maintained': maintained,
        'measures': measures,
        'additive': additive,
        'scope': scope,
        'reads_models': reads_models,
        'only_models': only_models,
        'max_scan_share': share,
        'restatement_window': restatement_window,
        'dimension': none,
        'reference': false,
    }) }}
{% endmacro %}

{#- Every input a model's select reads (directly, or through views and ephemeral models) is tied
    to its key by its scope, or declared static: a model of the kind among `scope.changes`
    (its recorded changes), a landed source among the changes or lookups, or its name in
    `scope.static` (a calendar, a list of codes: its changes put no key in scope). Else a change
    to it would be missed by every daily run, silently: a compiler error naming the input and
    the fix. Seeds are static by nature; a source without a landing contract has no versions to
    tie and is passed by. `where`: the scope's place in the declaration. -#}
{% macro check_inputs_tied(where, node, scope) %}
    {% set tied = scope.models | map(attribute='name') | list
        + (scope.direct + scope.through + scope.lookups) | map(attribute='name') | list
        + scope.static %}
    {% set pending = node.depends_on.nodes | list %}
    {% set seen = [] %}
    {#- breadth-first (Jinja has no while: the list grows as it is walked) -#}
    {% for unique_id in pending if unique_id not in seen %}
        {% do seen.append(unique_id) %}
        {% set src = graph.sources.get(unique_id) %}
        {% set upstream = graph.nodes.get(unique_id) %}
        {% if src is not none %}
            {% set name = src.source_name ~ '.' ~ src.name %}
            {% set landed = (src.config.meta or src.meta or {}).get('backfill_safe') is not none %}
            {% if landed and name not in tied %}
                {{ exceptions.raise_compiler_error(where ~ ": the select reads landed source '"
                    ~ name ~ "', which no entry ties to the key '" ~ scope.key ~ "': a change "
                    ~ "to it would be missed. Add it to changes ('" ~ name ~ "', {source: "
                    ~ name ~ ", key: <its column holding the key>}, or {source: " ~ name
                    ~ ", through: <a direct source>, 'on': <their column>}) or to lookups, or "
                    ~ "to static if its changes must put no key in scope") }}
            {% endif %}
        {% elif upstream is not none and upstream.resource_type == 'model' %}
            {% if upstream.config.materialized in ('view', 'ephemeral') %}
                {% do pending.extend(upstream.depends_on.nodes) %}
            {% elif upstream.name not in tied %}
                {{ exceptions.raise_compiler_error(where ~ ": the select reads model '"
                    ~ upstream.name ~ "' (materialized '" ~ upstream.config.materialized
                    ~ "'), which no entry ties to the key '" ~ scope.key ~ "': a change to it "
                    ~ "would be missed. " ~ ("Add {model: " ~ upstream.name ~ ", key: <its column "
                    ~ "holding the key>} to changes, or add it to static"
                    if upstream.config.materialized == 'backfill_safe' else "Only a model of the "
                    ~ "kind records its changes: materialize it 'backfill_safe' and tie it, or "
                    ~ "add it to static if its changes must put no key in scope")) }}
            {% endif %}
        {% endif %}
    {% endfor %}
{% endmacro %}

{#- The unique ids of every model and source a node reads, directly or through other models.
    `node`: a node (of the graph or not), or a node's unique id. -#}
{% macro ancestors_of(node) %}
    {% set found = [] %}
    {% set pending = [node] %}
    {#- breadth-first (Jinja has no while: the list grows as it is walked) -#}
    {% for item in pending %}
        {% set node = graph.nodes.get(item) if item is string else item %}
        {% for parent in (node.depends_on.nodes if node is not none else [])
            if parent not in found %}
            {% do found.append(parent) %}
            {% do pending.append(parent) %}
        {% endfor %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}

{#- Every model that declares config.meta.backfill_safe (a dimension's or a reference table's
    declaration aside: it has no event date to restate nor current state to reconcile), as
    declared_model gives it, by name.
    Empty while dbt parses (no graph yet). -#}
{% macro declared_models() %}
    {% set found = [] %}
    {% if execute %}
        {% for node in graph.nodes.values() | sort(attribute='name')
            if node.resource_type == 'model'
            and (node.config.meta or {}).get('backfill_safe') is not none %}
            {% set declared = backfill_safe.declared_model(node) %}
            {% if declared.dimension is none and not declared.reference %}
                {% do found.append(declared) %}
            {% endif %}
        {% endfor %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}

{#- The declaration of the model a relation is (a generic test's `model`), or none when that
    model declares nothing. -#}
{% macro declared_model_of(relation) %}
    {% for node in graph.nodes.values()
        if node.resource_type == 'model'
        and (node.schema | lower) == (relation.schema | lower)
        and (node.alias | lower) == (relation.identifier | lower)
        and (node.config.meta or {}).get('backfill_safe') is not none %}
        {% set declared = backfill_safe.declared_model(node) %}
        {{ return(declared if declared.dimension is none and not declared.reference else none) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}

{#- A lookback as declared (whole days >= 0, or a domain of var lookback_days), or a compiler
    error naming `where`. -#}
{% macro lookback_declaration(where, lookback) %}
    {% set domains = var('lookback_days', {}) %}
    {% if lookback is integer %}
        {% if lookback < 0 %}
            {{ exceptions.raise_compiler_error(where ~ ": lookback: a whole number of days >= 0 "
                ~ "or a domain of var 'lookback_days'; got " ~ lookback) }}
        {% endif %}
    {% elif lookback is not string or domains is not mapping
        or lookback not in domains %}
        {{ exceptions.raise_compiler_error(where ~ ": lookback domain '" ~ lookback
            ~ "' is not in var 'lookback_days' (domains: " ~ ((domains.keys() | list | sort
            | join(', ')) if domains is mapping else 'none') ~ "); name one, or declare the "
            ~ "model's own window in whole days (lookback: 3)") }}
    {% endif %}
{% endmacro %}

{#- A dimension's declaration under config.meta.backfill_safe:
      lookback:   its window in whole days, or a domain of var lookback_days
      dimension:  {type: 1 | 2, member_key: <column>, unknown_member: {<column>: <value>}}
        type 1:         one row per member, its current version (deleted members kept, flagged)
        type 2:         one row per version, valid_from / valid_to / is_current from its
                        update time, a late version closing the interval of the one before it
        member_key:     the column that names a member (the select's rows are its versions)
        unknown_member: the values of the unknown member's columns (the row facts point to
                        while their member has not arrived); its unique key is
                        unknown_member_key(), its member_key -1 unless given, every other
                        column null unless given
    The unique_key is the dimension's surrogate key (surrogate_key of the member key, and for
    type 2 of its update time), written by the materialization. Returned as declared_model's
    fields with `dimension`: {type, member_key, unknown_member}. -#}
{% macro declared_dimension(node, block, where) %}
    {% set known = ['lookback', 'dimension'] %}
    {% for key in block.keys() if key not in known %}
        {{ exceptions.raise_compiler_error(where ~ ": unknown key '" ~ key ~ "' for a dimension "
            ~ "(keys: " ~ known | join(', ') ~ ")") }}
    {% endfor %}
    {% if node.config.materialized != 'backfill_safe' %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension: a dimension of the kind is "
            ~ "materialized 'backfill_safe' (it is '" ~ node.config.materialized ~ "')") }}
    {% endif %}
    {% if block.get('lookback') in [none, ''] %}
        {{ exceptions.raise_compiler_error(where ~ ": 'lookback' is missing") }}
    {% endif %}
    {% do backfill_safe.lookback_declaration(where, block.lookback) %}
    {% set dimension = block.dimension %}
    {% if dimension is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension: a mapping with type and "
            ~ "member_key; got " ~ dimension) }}
    {% endif %}
    {% for key in dimension.keys() if key not in ['type', 'member_key', 'unknown_member'] %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension: unknown key '" ~ key
            ~ "' (keys: type, member_key, unknown_member)") }}
    {% endfor %}
    {% if dimension.get('type') not in [1, 2] %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension.type: 1 (overwritten) or 2 "
            ~ "(versions with validity intervals); got " ~ dimension.get('type')) }}
    {% endif %}
    {% set member_key = dimension.get('member_key') %}
    {% if not backfill_safe.is_identifier(member_key) %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension.member_key: one column name; got "
            ~ member_key) }}
    {% endif %}
    {% set unique_key = node.config.unique_key %}
    {% if not backfill_safe.is_identifier(unique_key) %}
        {{ exceptions.raise_compiler_error(where ~ ": the model needs one unique_key column in "
            ~ "its config (the dimension's surrogate key); got " ~ unique_key) }}
    {% endif %}
    {% set unknown = dimension.get('unknown_member') or {} %}
    {% if unknown is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension.unknown_member: a mapping of "
            ~ "column to value; got " ~ unknown) }}
    {% endif %}
    {% set documented = node.columns.keys() | list %}
    {% if not documented %}
        {{ exceptions.raise_compiler_error(where ~ ": a dimension of the kind documents its "
            ~ "columns in its yml (they are the table's, in order)") }}
    {% endif %}
    {% set derived = [unique_key, member_key, 'is_deleted', 'updated_at']
        + (['valid_from', 'valid_to', 'is_current'] if dimension.type == 2 else []) %}
    {% for column in derived + unknown.keys() | list if column not in documented %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension: column '" ~ column ~ "' is not "
            ~ "among the model's documented columns " ~ documented) }}
    {% endfor %}
    {% for column, value in unknown.items() if column in [unique_key] + derived[2:] %}
        {{ exceptions.raise_compiler_error(where ~ ".dimension.unknown_member: '" ~ column
            ~ "' is the framework's to write") }}
    {% endfor %}
    {{ return({
        'name': node.name,
        'unique_id': node.unique_id,
        'unique_key': unique_key,
        'lookback': block.lookback,
        'event_date': none,
        'scope': none,
        'reads_models': false,
        'only_models': false,
        'measures': [],
        'additive': [],
        'dimension': {'type': dimension.type, 'member_key': member_key,
                      'unknown_member': unknown},
        'reference': false,
    }) }}
{% endmacro %}

{#- A reference table's declaration under config.meta.backfill_safe: `reference: true`, alone.
    Its select gives every row of the table on every run, with no deleted flag (a calendar, a
    list of codes): small, a function of its inputs, not of a change stream. A full build
    writes them; an incremental run merges the rows that are new or differ from the table's
    (rows_to_merge without changes), probed before anything is staged, and deletes none; no
    version guard (the select is the truth), no lookback, nothing to restate by date. Returned
    as declared_model's fields, with `reference` true. -#}
{% macro declared_reference(node, block, where) %}
    {% for key in block.keys() if key != 'reference' %}
        {{ exceptions.raise_compiler_error(where ~ ": unknown key '" ~ key ~ "' for a reference "
            ~ "table (its only key is reference: true)") }}
    {% endfor %}
    {% if block.reference is not sameas true %}
        {{ exceptions.raise_compiler_error(where ~ ".reference: true, or no reference key; got "
            ~ block.reference) }}
    {% endif %}
    {% if node.config.materialized != 'backfill_safe' %}
        {{ exceptions.raise_compiler_error(where ~ ".reference: a reference table of the kind is "
            ~ "materialized 'backfill_safe' (it is '" ~ node.config.materialized ~ "')") }}
    {% endif %}
    {% set unique_key = node.config.unique_key %}
    {% if not backfill_safe.is_identifier(unique_key) %}
        {{ exceptions.raise_compiler_error(where ~ ": the model needs one unique_key column in "
            ~ "its config; got " ~ unique_key) }}
    {% endif %}
    {% set documented = node.columns.keys() | list %}
    {% if unique_key not in documented %}
        {{ exceptions.raise_compiler_error(where ~ ": column '" ~ unique_key ~ "' (the unique "
            ~ "key) is not among the model's documented columns " ~ documented) }}
    {% endif %}
    {{ return({
        'name': node.name,
        'unique_id': node.unique_id,
        'unique_key': unique_key,
        'lookback': none,
        'event_date': none,
        'scope': none,
        'reads_models': false,
        'only_models': false,
        'measures': [],
        'additive': [],
        'dimension': none,
        'reference': true,
    }) }}
{% endmacro %}
