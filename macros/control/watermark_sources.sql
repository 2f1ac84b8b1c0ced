{#- The landed tables whose versions move a model's watermark, as (source_name, table) pairs:
    every source the model reads, directly or through other models (upstream_sources), or for a
    model whose scope names models of the kind the landed sources it names beside them, less
    those its scope's lookups name and those its config `meta: {watermark_exclude:
    [source_name.table, ...]}` names (sources it reads for something other than their changes:
    the shop's facts read customers only to know they arrived). The one list the advance (advance_watermark) and the drift check
    (watermark_drift) read. `node`: a model node of the graph. -#}
{% macro watermark_sources(node) %}
    {% set excluded = ((node.config.meta or {}).get('watermark_exclude') or []) | list %}
    {#- the scope's lookups are read for whether a member arrived, not for their changes -#}
    {% for lookup in (((node.config.meta or {}).get('backfill_safe') or {}).get('scope') or {})
        .get('lookups') or [] if lookup is mapping and lookup.get('source') %}
        {% do excluded.append(lookup.source) %}
    {% endfor %}
    {% set found = [] %}
    {#- a model whose scope names models of the kind: only the landed sources it names beside
        them (none for an aggregate): the sources read through those models move their
        watermarks, not this one's -#}
    {% set scope = ((node.config.meta or {}).get('backfill_safe') or {}).get('scope') %}
    {% set split = backfill_safe.scope_change_entries(
        scope.get('changes') if scope is mapping else none) %}
    {% if split.models %}
        {% for change in split.landed %}
            {% set name = (change.source if change is mapping else change) | string %}
            {% set parts = name.split('.') %}
            {% if name not in excluded and (parts[0], parts[-1]) not in found %}
                {% do found.append((parts[0], parts[-1])) %}
            {% endif %}
        {% endfor %}
        {{ return(found) }}
    {% endif %}
    {% for source_id in backfill_safe.upstream_sources(node.unique_id) %}
        {% set src = graph.sources[source_id] %}
        {% if (src.source_name ~ '.' ~ src.name) not in excluded %}
            {% do found.append((src.source_name, src.name)) %}
        {% endif %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}
