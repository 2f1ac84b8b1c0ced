{#- The table properties the kind needs, set on a table it created when the model's config
    did not: a backfill writes to a branch of the table (write.wap.enabled; spark.wap.branch
    is silently ignored without it), and a daily MERGE writes its changed rows and delete
    files (merge-on-read) instead of rewriting every data file that holds a changed row. -#}
{% macro kind_table_properties(relation) %}
    {% set wanted = {'write.wap.enabled': 'true', 'write.merge.mode': 'merge-on-read',
                     'write.update.mode': 'merge-on-read', 'write.delete.mode': 'merge-on-read'} %}
    {% set given = config.get('tblproperties') or {} %}
    {% set missing = [] %}
    {% for name, value in wanted.items() if name not in given %}
        {% do missing.append("'" ~ name ~ "' = '" ~ value ~ "'") %}
    {% endfor %}
    {% if missing %}
        {% call statement('kind_table_properties', fetch_result=false) %}
            alter table {{ relation }} set tblproperties ({{ missing | join(', ') }})
        {% endcall %}
    {% endif %}
{% endmacro %}
