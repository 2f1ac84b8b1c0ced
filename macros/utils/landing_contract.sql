{#- The landing contract of a raw table, as its source declares it in the sources yml (dbt's
    `columns` with `data_type`, and a `backfill_safe` block under the table's config.meta):
    {source_name, name, relation, unique_key, update_column, columns, column_types (column ->
    its declared data_type, or none), quarantine}. The staging macros read the declaration only
    through this macro: a dbt unit test, whose `graph` is empty, gives the contract as this
    macro's override (models/staging/shop/_shop__unit_tests.yml), or, given none, reads the
    given rows with no rule (unique_key none: the staging's own key columns). The same
    declaration `pipeline land` reads from the manifest (scripts/pipeline/contract.py, which
    also checks types); a compiler error names a table that does not declare the block, a
    declaration without unique_key, or a key or rule column the table does not declare.
    While dbt parses (no graph yet), and under sqlfluff, it returns a placeholder contract (one
    key column, no rules) so the SQL renders. -#}
{% macro landing_contract(source_name, table_name) %}
    {% if not execute %}
        {{ return({'source_name': source_name, 'name': table_name, 'relation': none,
                   'unique_key': ['placeholder_key'], 'update_column': 'updated_at',
                   'columns': ['placeholder_key', 'updated_at'], 'column_types': {},
                   'quarantine': []}) }}
    {% endif %}
    {% if graph.get('sources') is none %}
        {#- a dbt unit test: dbt gives it no graph, so no declaration to read. The given rows are
            the versions as dbt documents them: no quarantine rule, ranked by updated_at, keyed
            by the key columns the staging names (screened_versions' key_columns). A unit test of
            the rules overrides this macro with the contract (models/staging/shop). -#}
        {{ return({'source_name': source_name, 'name': table_name, 'relation': none,
                   'unique_key': none, 'update_column': 'updated_at', 'columns': [],
                   'column_types': {}, 'quarantine': []}) }}
    {% endif %}
    {% set declared = [] %}
    {% set found = [] %}
    {% for src in graph.sources.values() %}
        {% set block = (src.config.meta or src.meta or {}).get('backfill_safe') %}
        {% if block is not none %}
            {% do declared.append(src.source_name ~ '.' ~ src.name) %}
        {% endif %}
        {% if src.source_name == source_name and src.name == table_name %}
            {% do found.append((src, block)) %}
        {% endif %}
    {% endfor %}
    {% if not found or found[0][1] is none %}
        {{ exceptions.raise_compiler_error(
            "source " ~ source_name ~ "." ~ table_name ~ " is not a landed raw table: declare it "
            ~ "in a sources yml with config.meta.backfill_safe (unique_key, quarantine). Landed "
            ~ "tables: " ~ (declared | sort | join(', ') or 'none')) }}
    {% endif %}
    {% set src, block = found[0] %}
    {% set columns = src.columns.keys() | list %}
    {% set column_types = {} %}
    {% for name, column in src.columns.items() %}
        {% do column_types.update({name: column.data_type}) %}
    {% endfor %}
    {% set where = "source " ~ source_name ~ "." ~ table_name ~ " (backfill_safe)" %}
    {% set unique_key = block.get('unique_key') %}
    {% if unique_key is string %}
        {% set unique_key = [unique_key] %}
    {% endif %}
    {% if not unique_key %}
        {{ exceptions.raise_compiler_error(where ~ ": unique_key is missing (the columns that "
            ~ "identify one entity, e.g. unique_key: [entity_id])") }}
    {% endif %}
    {% set update_column = src.loaded_at_field or 'updated_at' %}
    {% for column in unique_key + [update_column, 'is_deleted', '_loaded_at', '_source_file'] %}
        {% if column not in columns %}
            {{ exceptions.raise_compiler_error(where ~ ": column '" ~ column ~ "' is not declared "
                ~ "in its columns " ~ columns) }}
        {% endif %}
    {% endfor %}
    {{ return({'source_name': source_name, 'name': table_name,
               'relation': source(source_name, table_name), 'unique_key': unique_key,
               'update_column': update_column, 'columns': columns,
               'column_types': column_types,
               'quarantine': block.get('quarantine') or []}) }}
{% endmacro %}

{#- The (source_name, table) of every landed raw table (a source table with a backfill_safe
    block), sorted; for the views and tests that cover them all. -#}
{% macro landed_tables() %}
    {% set tables = [] %}
    {% if execute %}
        {% for src in graph.sources.values() %}
            {% if (src.config.meta or src.meta or {}).get('backfill_safe') is not none %}
                {% do tables.append((src.source_name, src.name)) %}
            {% endif %}
        {% endfor %}
    {% endif %}
    {{ return(tables | sort) }}
{% endmacro %}

{#- The (source_name, table) of the landed raw table a relation is (a source test's `model`),
    or a compiler error. -#}
{% macro landed_table_of(relation) %}
    {% for src in graph.sources.values() %}
        {% if (src.schema | lower) == (relation.schema | lower)
            and ((src.identifier or src.name) | lower) == (relation.identifier | lower) %}
            {{ return((src.source_name, src.name)) }}
        {% endif %}
    {% endfor %}
    {{ exceptions.raise_compiler_error(relation ~ " is not a source of the project") }}
{% endmacro %}
