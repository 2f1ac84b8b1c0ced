{#- The names of a relation's columns, in order, without a query when dbt's relation cache has
    them: a relation dbt listed in this invocation (its schema's `show table extended`, which
    prints each table's and view's schema after `Schema: root`) and did not create or drop
    since (dbt's cache forgets a dropped relation and keeps a created one without that text).
    Otherwise dbt's get_columns_in_relation (a `describe extended`). Names only: the listing
    spells types otherwise than describe does (`integer`, `long` for `int`, `bigint`).
    Without it a run of both examples sent dozens of describes of relations dbt had listed
    already, most of them in its hooks (docs/benchmarks/history.md). The listing is as fresh as
    the invocation's start: a column added since by a statement dbt's cache does not see (an
    `alter table` in a hook) is missed; the framework changes a table's columns only by
    building it again (a full refresh), which the cache sees. -#}
{% macro column_names(relation) %}
    {% if execute %}
        {% set listed = adapter.get_relation(database=relation.database, schema=relation.schema,
                                             identifier=relation.identifier) %}
        {% set information = (listed.information or '') if listed is not none else '' %}
        {% set marker = '\nSchema: root\n' %}
        {% if marker in information %}
            {#- the last: the schema follows a view's text, which could hold the marker -#}
            {% set names = modules.re.findall('(?m)^ \\|-- (.+?): ',
                                              information.split(marker)[-1]) %}
            {% if names %}
                {{ return(names) }}
            {% endif %}
        {% endif %}
    {% endif %}
    {{ return(adapter.get_columns_in_relation(relation) | map(attribute='name') | list) }}
{% endmacro %}
