{#- The final select of every incremental model: what reaches the MERGE.
    - Full build: the rows of `live` (a CTE of current, non-deleted rows), as they are.
    - Incremental: only rows that differ from the table (a null-safe anti-join over all of the
      table's columns, so an unchanged row is not rewritten and a rerun changes nothing), flagged
      `_is_deleted = false`; plus, when `deleted` (a CTE of keys whose current state is deleted)
      is given, the table's rows for those keys flagged `_is_deleted = true` (rule 6).
    guarded_merge_sql turns the flag into DELETE / UPDATE / INSERT. -#}
{% macro merge_source(live, deleted=none, unique_key=none) %}
    {% if not is_incremental() %}
        select * from {{ live }}
    {% else %}
        {% set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list %}
        select
            {%- for column in columns %}
            changed.{{ column }},
            {%- endfor %}
            false as _is_deleted
        from {{ live }} as changed
        left anti join {{ this }} as existing
            on
            {%- for column in columns %}
            changed.{{ column }} <=> existing.{{ column }}{{ " and" if not loop.last }}
            {%- endfor %}
        {%- if deleted is not none %}
        union all
        select
            {%- for column in columns %}
            existing.{{ column }},
            {%- endfor %}
            true as _is_deleted
        from {{ this }} as existing
        left semi join {{ deleted }} as removed
            on existing.{{ unique_key }} = removed.{{ unique_key }}
        {%- endif %}
    {% endif %}
{% endmacro %}
