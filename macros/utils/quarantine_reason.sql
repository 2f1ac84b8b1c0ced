{#- Why a landed version of a raw table must not be loaded, as a SQL expression: the first
    broken rule's reason, or null for a loadable row. Raw keeps every landed row (nothing is
    lost); the staging views read only loadable ones (screened_versions) and
    audit.audit_quarantined_rows lists the others with this reason. The watermark is computed
    over loadable rows only, so a version stamped in the future (a source clock running ahead)
    cannot move it past rows that never loaded.
    Rules for every landed table: a key column (unique_key) null or, when numeric, not
    positive; the update time (the source's loaded_at_field) null, or later than the row's
    landing (`_loaded_at`) by more than var clock_skew_tolerance_minutes. Then the table's own
    rules, declared in order in its sources yml (config.meta.backfill_safe.quarantine), each
    applied to versions that are not deletions (a deletion need only name its key):
      - not_null: COLUMN            reason 'null COLUMN'
      - non_negative: COLUMN        reason 'negative COLUMN'
      - reject_if: SQL, reason: R   reason R when the SQL (over the table's columns) is true
    `key_columns`: the key when the contract has none (a dbt unit test's: landing_contract).
    The expression names the table's columns unqualified (reject_if's SQL is written so): use
    it where they are unambiguous, e.g. over one relation. -#}
{% macro quarantine_reason(source_name, table, key_columns=none) %}
    {%- set contract = backfill_safe.landing_contract(source_name, table) -%}
    {%- set where = "source " ~ source_name ~ "." ~ table ~ " (backfill_safe.quarantine)" -%}
    {%- set live = "not coalesce(is_deleted, false) and " -%}
    {%- set numeric = ('bigint', 'int', 'integer', 'smallint', 'tinyint', 'long', 'short') -%}
    {%- set rules = [] -%}
    {%- for key in contract.unique_key or key_columns or [] -%}
        {%- do rules.append((key ~ " is null", "null key " ~ key)) -%}
        {%- set data_type = (contract.column_types.get(key) or '') | lower -%}
        {%- if data_type in numeric -%}
            {%- do rules.append((key ~ " <= 0", "malformed key " ~ key ~ " (not positive)")) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set updated = contract.update_column -%}
    {%- do rules.append((updated ~ " is null", "null " ~ contract.update_column)) -%}
    {%- do rules.append((updated ~ " > _loaded_at + make_dt_interval(0, 0, "
        ~ (var('clock_skew_tolerance_minutes', 60) | int) ~ ", 0)",
        contract.update_column ~ " later than its landing (source clock ahead)")) -%}
    {%- for rule in contract.quarantine -%}
        {%- if rule is not mapping -%}
            {{ exceptions.raise_compiler_error(where ~ ": each rule is a mapping (not_null, "
                ~ "non_negative, or reject_if with reason); got " ~ rule) }}
        {%- endif -%}
        {%- set kinds = rule.keys() | reject('equalto', 'reason') | list -%}
        {%- if kinds | length != 1 or kinds[0] not in ('not_null', 'non_negative', 'reject_if') -%}
            {{ exceptions.raise_compiler_error(where ~ ": a rule is one of not_null: COLUMN, "
                ~ "non_negative: COLUMN, reject_if: SQL (with reason: TEXT); got " ~ rule) }}
        {%- endif -%}
        {%- set kind = kinds[0] -%}
        {%- if kind == 'reject_if' -%}
            {%- if not rule.get('reason') -%}
                {{ exceptions.raise_compiler_error(where ~ ": reject_if needs a reason; got " ~ rule) }}
            {%- endif -%}
            {%- do rules.append((live ~ "(" ~ rule['reject_if'] ~ ")",
                rule['reason'])) -%}
        {%- else -%}
            {%- set column = rule[kind] -%}
            {%- if column not in contract.columns -%}
                {{ exceptions.raise_compiler_error(where ~ ": " ~ kind ~ " names column '"
                    ~ column ~ "', which the table does not declare " ~ contract.columns) }}
            {%- endif -%}
            {%- if kind == 'not_null' -%}
                {%- do rules.append((live ~ column ~ " is null", "null " ~ column)) -%}
            {%- else -%}
                {%- do rules.append((live ~ column ~ " < 0", "negative " ~ column)) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    case
        {%- for condition, reason in rules %}
        when {{ condition }} then '{{ reason | replace("'", "\\'") }}'
        {%- endfor %}
    end
{%- endmacro %}
