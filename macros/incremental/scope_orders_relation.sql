{#- The session's temporary view of this model's scope (cache_scope_orders). -#}
{% macro scope_orders_relation() %}
    {{ return('scope_orders__' ~ validated_identifier(this.identifier)) }}
{% endmacro %}

{#- The session's temporary view of the raw versions of this model's orders in scope, of
    `table` (orders or order_items), or of the customers those orders' versions name
    (customers): cache_scope_orders makes it, versions_in_scope reads it. -#}
{% macro scope_versions_relation(table) %}
    {% if table not in ('orders', 'order_items', 'customers') %}
        {{ exceptions.raise_compiler_error(
            "scope_versions_relation: orders, order_items or customers, not '" ~ table ~ "'") }}
    {% endif %}
    {{ return('scope_' ~ table ~ '_versions__' ~ validated_identifier(this.identifier)) }}
{% endmacro %}

{#- The subquery of this model's orders in scope that cache_scope_orders returns: the key by
    which versions_in_scope recognises the run's scope. -#}
{% macro cached_scope_orders_subquery() %}
    {{ return('select order_id from ' ~ scope_orders_relation()) }}
{% endmacro %}

{#- The names of the cached temporary views a run of `domain` shares between its models
    (cache_shared_scope): `changed`, the orders the SQL `changed` finds, and `orders` and
    `order_items`, the raw versions of those orders. Named after this dbt invocation and a hash
    of the SQL (whose literals are the model's lower and landing bounds), so only models of one
    invocation that compute the same orders share them. `of_domain` is a regular expression
    matching every invocation's views of the domain, its group 1 the invocation's part, which
    is `invocation` in this one's names. -#}
{% macro shared_scope_relations(domain, changed) %}
    {% set invocation = (invocation_id | replace('-', ''))[:12] | lower %}
    {% set suffix = validated_identifier(domain) | lower ~ '_' ~ invocation ~ '_'
        ~ local_md5(changed | trim)[:12] %}
    {{ return({
        'changed': 'scope_shared_changed__' ~ suffix,
        'orders': 'scope_shared_orders__' ~ suffix,
        'order_items': 'scope_shared_order_items__' ~ suffix,
        'customers': 'scope_shared_customers__' ~ suffix,
        'of_domain': 'scope_shared_(?:changed|orders|order_items|customers)__' ~ (domain | lower)
            ~ '_([0-9a-f]{12})_[0-9a-f]{12}',
        'invocation': invocation,
    }) }}
{% endmacro %}
