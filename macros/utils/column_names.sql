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
        {% set names = modules.re.findall('(?m)^ \\|-- (.+?): ',
                                          backfill_safe.listed_schema(relation)) %}
        {% if names %}
            {{ return(names) }}
        {% endif %}
    {% endif %}
    {{ return(adapter.get_columns_in_relation(relation) | map(attribute='name') | list) }}
{% endmacro %}


{#- A table's column types by name, as Spark spells them in a cast (the listing's `long`,
    `integer` are Spark types too): from dbt's relation cache when it listed the table in this
    invocation (listed_schema), else a describe. -#}
{% macro column_types(relation) %}
    {% set found = {} %}
    {% for name, type in modules.re.findall('(?m)^ \\|-- (.+?): (.+?) \\(nullable',
                                            backfill_safe.listed_schema(relation)) %}
        {% do found.update({name: type}) %}
    {% endfor %}
    {% if not found %}
        {% for column in adapter.get_columns_in_relation(relation) %}
            {% do found.update({column.name: column.data_type}) %}
        {% endfor %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{#- The schema dbt's relation cache printed for `relation` when it listed it in this invocation
    (its schema's `show table extended`: the tree after `Schema: root`), or '' (not listed, or
    created or dropped since: column_names). -#}
{% macro listed_schema(relation) %}
    {% set listed = adapter.get_relation(database=relation.database, schema=relation.schema,
                                         identifier=relation.identifier) %}
    {% set information = (listed.information or '') if listed is not none else '' %}
    {% set marker = '\nSchema: root\n' %}
    {#- the last: the schema follows a view's text, which could hold the marker -#}
    {{ return(information.split(marker)[-1] if marker in information else '') }}
{% endmacro %}
