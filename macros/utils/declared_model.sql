{#- The framework's declaration of an incremental model, from its config: the model's
    `unique_key`, and under config.meta.backfill_safe
      event_date:    the column of its event date (its partition column): the dates a
                     restatement rewrites, the grain of its reconciliation
      lookback:      its window in whole days, or a domain of var lookback_days (shared)
      current_state: the model that holds every key's row as it should be now, with no
                     incremental logic (every column of this model plus `is_deleted`)
      measures:      (optional) the columns whose daily sums reconcile it, e.g. [net_amount]
      scope:         (optional) how its rows are tied to its sources' versions, so a daily run
                     reads only the keys its changes reach (declared_scope)
      max_scan_share: (optional) the largest share of its table's data files one read of a
                     daily run may take (record_scans warns)
    Returned as {name, unique_id, relation, unique_key, event_date, lookback, current_state,
    current_state_relation, measures, scope, max_scan_share}. A declaration that is incomplete or names what does not
    exist is a compiler error naming the model and the key. `node` is a model node of the graph. -#}
{% macro declared_model(node) %}
    {% do backfill_safe.check_framework_declaration(node) %}
    {% set block = (node.config.meta or {}).get('backfill_safe') %}
    {% set where = "model " ~ node.name ~ " (" ~ node.original_file_path
        ~ "), config.meta.backfill_safe" %}
    {% if block is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ": a mapping with event_date, lookback and "
            ~ "current_state is required; got " ~ block) }}
    {% endif %}
    {% set known = ['event_date', 'lookback', 'current_state', 'measures', 'scope',
                    'max_scan_share'] %}
    {% for key in block.keys() if key not in known %}
        {{ exceptions.raise_compiler_error(where ~ ": unknown key '" ~ key ~ "' (keys: "
            ~ known | join(', ') ~ ")") }}
    {% endfor %}
    {% for key in ['event_date', 'lookback', 'current_state']
        if block.get(key) is none or block.get(key) == '' %}
        {{ exceptions.raise_compiler_error(where ~ ": '" ~ key ~ "' is missing") }}
    {% endfor %}
    {% set domains = var('lookback_days', {}) %}
    {% if block.lookback is integer %}
        {% if block.lookback < 0 %}
            {{ exceptions.raise_compiler_error(where ~ ": lookback: a whole number of days >= 0 "
                ~ "or a domain of var 'lookback_days'; got " ~ block.lookback) }}
        {% endif %}
    {% elif block.lookback is not string or domains is not mapping
        or block.lookback not in domains %}
        {{ exceptions.raise_compiler_error(where ~ ": lookback domain '" ~ block.lookback
            ~ "' is not in var 'lookback_days' (domains: " ~ ((domains.keys() | list | sort
            | join(', ')) if domains is mapping else 'none') ~ "); name one, or declare the "
            ~ "model's own window in whole days (lookback: 3)") }}
    {% endif %}
    {% set share = backfill_safe.max_scan_share(node) %}
    {% set unique_key = node.config.unique_key %}
    {% if unique_key is not string or not unique_key %}
        {{ exceptions.raise_compiler_error(where ~ ": the model needs one unique_key column in "
            ~ "its config; got " ~ unique_key) }}
    {% endif %}
    {% set documented = node.columns.keys() | list %}
    {% set measures = block.get('measures') or [] %}
    {% for column in [unique_key, block.event_date] + measures
        if documented and column not in documented %}
        {{ exceptions.raise_compiler_error(where ~ ": column '" ~ column ~ "' is not among the "
            ~ "model's documented columns " ~ documented) }}
    {% endfor %}
    {% set states = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
        | selectattr('name', 'equalto', block.current_state) | list %}
    {% if not states %}
        {{ exceptions.raise_compiler_error(where ~ ": current_state '" ~ block.current_state
            ~ "' is no model of the project") }}
    {% endif %}
    {% set state = states[0] %}
    {% set scope = backfill_safe.scope_declaration(where, block) %}
    {% if scope is not none and documented and scope.key not in documented %}
        {{ exceptions.raise_compiler_error(where ~ ".scope: key '" ~ scope.key ~ "' is not among "
            ~ "the model's documented columns " ~ documented) }}
    {% endif %}
    {{ return({
        'name': node.name,
        'unique_id': node.unique_id,
        'relation': api.Relation.create(database=node.database, schema=node.schema,
                                        identifier=node.alias, type='table'),
        'unique_key': unique_key,
        'event_date': block.event_date,
        'lookback': block.lookback,
        'current_state': state.unique_id,
        'current_state_relation': api.Relation.create(database=state.database,
            schema=state.schema, identifier=state.alias, type='view'),
        'measures': measures,
        'scope': scope,
        'max_scan_share': share,
    }) }}
{% endmacro %}

{#- Every model that declares config.meta.backfill_safe, as declared_model gives it, by name.
    Empty while dbt parses (no graph yet). -#}
{% macro declared_models() %}
    {% set found = [] %}
    {% if execute %}
        {% for node in graph.nodes.values() | sort(attribute='name')
            if node.resource_type == 'model'
            and (node.config.meta or {}).get('backfill_safe') is not none %}
            {% do found.append(backfill_safe.declared_model(node)) %}
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
        {{ return(backfill_safe.declared_model(node)) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}
