{#- The surrogate key of a dimension's unknown member: the row a fact points to while the member
    it references has not arrived (an order's customer, or a line's product, whose own record has
    not landed yet). Every dimension holds that row, so the facts stay joinable; the fact rows
    that point to it are in every daily run's scope (the declaration's scope.awaiting, which
    the model passes to scope_predicate's `awaiting`) until the member arrives and they are
    re-keyed, however old the member's own updated_at. -#}
{% macro unknown_member_key() %}'-1'{% endmacro %}
