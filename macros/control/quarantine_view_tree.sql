{#- The view tree (view_tree) of audit_quarantined_rows: one member per landed raw table the
    sources declare, its quarantined versions (landed_versions, keep="quarantined"), in the
    model's schema; none while dbt parses. Made once per invocation. -#}
{% macro quarantine_view_tree() %}
    {#- once per invocation: the model's body, its pre-hook and its post-hook ask -#}
    {% set made = backfill_safe.invocation_store('quarantine_view_tree') if execute else {} %}
    {% if this ~ '' in made %}
        {{ return(made[this ~ '']) }}
    {% endif %}
    {% set members = [] %}
    {% if execute %}
        {% for source_name, table in backfill_safe.landed_tables() %}
            {% do members.append({'name': source_name ~ '__' ~ table,
                                  'body': backfill_safe.landed_versions(source_name, table, keep="quarantined")}) %}
        {% endfor %}
    {% endif %}
    {#- called by the model and its hooks: `this` is the model's relation -#}
    {% set tree = backfill_safe.view_tree(this.schema, 'quarantined_rows__', members) %}
    {% if execute %}
        {% do made.update({this ~ '': tree}) %}
    {% endif %}
    {{ return(tree) }}
{% endmacro %}
