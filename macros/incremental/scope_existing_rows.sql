{#- The table's rows a run scoped by orders can match, as a predicate for merge_source's read of
    the table (`existing`): the run's order dates (scope_order_dates: Iceberg plans only those
    partitions' files) and its orders (`scoped_orders`, the cached subquery cache_scope_orders
    returned: every key of the run's current state belongs to one of them, and a row's unique
    key determines its order). The orders filter the rows read by a broadcast semi-join before
    they are joined to the current state: the dates alone kept every row of the touched
    partitions, about half the table on a day of corrections, and shuffled them all into the
    join. None when every order is in scope. -#}
{% macro scope_existing_rows(date_column, scoped_orders) %}
    {% if not scoped_orders %}
        {{ return(none) }}
    {% endif %}
    {% set dates = scope_order_dates(date_column) %}
    {{ return("(" ~ dates ~ ") and order_id in (" ~ scoped_orders ~ ")") }}
{% endmacro %}
