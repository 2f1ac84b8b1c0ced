{#- Why a landed version of a raw table must not be loaded, as a SQL expression: the first
    broken rule's reason, or null for a loadable row. Raw keeps every landed row (nothing is
    lost); the staging views read only loadable ones (screened_versions) and
    audit.audit_quarantined_rows lists the others with this reason. The watermark is computed
    over loadable rows only, so a version stamped in the future (a source clock running ahead)
    cannot move it past rows that never loaded.
    Rules, for every table: a key null or not positive; updated_at null, or later than the
    row's landing (`_loaded_at`) by more than var clock_skew_tolerance_minutes. For versions
    that are not deletions (a deletion need only name its key): order lines with a null
    product_id, a null or negative quantity or unit_price, a negative discount or a discount above the gross
    (quantity x unit_price); orders without ordered_at or customer_id; products with a
    negative unit_cost. `columns_prefix` qualifies the columns (e.g. 'versions.'). -#}
{% macro quarantine_reason(table, columns_prefix='') %}
    {%- set p = columns_prefix -%}
    {%- set live = "not coalesce(" ~ p ~ "is_deleted, false) and " -%}
    {%- set rules = [] -%}
    {%- for key in source_key_columns(table) -%}
        {%- do rules.append((p ~ key ~ " is null", "null key " ~ key)) -%}
        {%- do rules.append((p ~ key ~ " <= 0", "malformed key " ~ key ~ " (not positive)")) -%}
    {%- endfor -%}
    {%- do rules.append((p ~ "updated_at is null", "null updated_at")) -%}
    {%- do rules.append((p ~ "updated_at > " ~ p ~ "_loaded_at + make_dt_interval(0, 0, "
        ~ (var('clock_skew_tolerance_minutes') | int) ~ ", 0)",
        "updated_at later than its landing (source clock ahead)")) -%}
    {%- if table == 'order_items' -%}
        {%- do rules.append((live ~ p ~ "product_id is null", "null product_id")) -%}
        {%- do rules.append((live ~ p ~ "quantity is null", "null quantity")) -%}
        {%- do rules.append((live ~ p ~ "quantity < 0", "negative quantity")) -%}
        {%- do rules.append((live ~ p ~ "unit_price is null", "null unit_price")) -%}
        {%- do rules.append((live ~ p ~ "unit_price < 0", "negative unit_price")) -%}
        {%- do rules.append((live ~ p ~ "discount_amount < 0", "negative discount_amount")) -%}
        {%- do rules.append((live ~ "coalesce(" ~ p ~ "discount_amount, 0) > " ~ p ~ "quantity * " ~ p ~ "unit_price",
            "discount_amount above the gross (quantity x unit_price)")) -%}
    {%- elif table == 'orders' -%}
        {%- do rules.append((live ~ p ~ "ordered_at is null", "null ordered_at")) -%}
        {%- do rules.append((live ~ p ~ "customer_id is null", "null customer_id")) -%}
    {%- elif table == 'products' -%}
        {%- do rules.append((live ~ p ~ "unit_cost < 0", "negative unit_cost")) -%}
    {%- endif -%}
    case
        {%- for condition, reason in rules %}
        when {{ condition }} then '{{ reason }}'
        {%- endfor %}
    end
{%- endmacro %}
