{#- A full build's table, refused (dropped, so the next run builds it again and is refused
    again) when the declared event date is not a DATE column: restate, backfill windows and the
    audit's dates compare it with dates, and a timestamp failed only there, late (`pipeline
    restate` exited 2 after printing its plan). One describe, on full builds only. -#}
{% macro check_event_date_type(declared, relation) %}
    {% if not declared.event_date %}
        {{ return(none) }}
    {% endif %}
    {% set found = adapter.get_columns_in_relation(relation)
        | selectattr('name', 'equalto', declared.event_date) | map(attribute='data_type')
        | list %}
    {% if found and found[0] | lower != 'date' %}
        {% do adapter.drop_relation(relation.incorporate(type='table')) %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " ("
            ~ model.original_file_path ~ "): config.meta.backfill_safe event_date '"
            ~ declared.event_date ~ "' is a " ~ found[0] ~ " column; it must be a DATE (cast it "
            ~ "in the select: cast(... as date) as " ~ declared.event_date ~ "). The table was "
            ~ "not kept") }}
    {% endif %}
{% endmacro %}
