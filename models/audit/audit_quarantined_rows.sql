-- Quarantine: every landed version the staging views do not load, with the rule it broke
-- (quarantine_reason, screened_versions), for every landed raw table the sources declare
-- (config.meta.backfill_safe). The rows stay in raw: nothing is lost, and a fixed version
-- landed later (a newer update time) simply supersedes them. A view, so it is always current;
-- the data test landed_rows_are_loaded_or_quarantined checks that every landed file's rows are
-- all either loaded or listed here.
-- A union of one view per landed table (quarantine_view_tree): the views are made before this
-- one (the pre-hook), those no longer read dropped after it (the post-hook), so no view's text
-- grows with the number of landed tables.
-- A project whose sources declare no landed table yet (a team that just installed the
-- framework) gets the view with no row.
{{ config(
    pre_hook="{{ backfill_safe.create_view_tree(backfill_safe.quarantine_view_tree()) }}",
    post_hook="{{ backfill_safe.drop_views_outside_tree(backfill_safe.quarantine_view_tree()) }}"
) }}
{%- set tree = quarantine_view_tree() %}
{%- if not tree.parts %}
    select
        cast(null as string) as source_name,
        cast(null as string) as source_table,
        cast(null as string) as record_key,
        cast(null as string) as reason,
        cast(null as timestamp) as updated_at,
        cast(null as timestamp) as _loaded_at,
        cast(null as string) as _source_file,
        cast(null as string) as landed_row
    where false
{%- else %}
{{ tree.top }}
{%- endif %}
