-- Every distinct version of every product (one row per product_id and updated_at), the
-- history dim_product (type 2) is built from: the landed versions that break no rule, one per
-- version. The SQL is the macro staged_product_versions, which the intermediate models inline
-- restricted to a run's products.
{{ staged_product_versions() }}
