{#- The run plan of the model being compiled or run: what this invocation does with it, decided
    once and read by every step (the select's scope as it compiles, the materialization, the
    MERGE, the watermark's advance). The one place that reads a model's declaration for its run
    and asks the invocation's mode:
      declared:           declared_model of the node (its kind's declaration, checked), or none
                          for a model not materialized 'backfill_safe' (a team's plain model,
                          a dbt unit test's node)
      scope:              declared.scope (how its rows are tied to its sources' versions), or none
      existing_relation:  its table as the relation cache has it, or none
      full_build:         no table yet, a view, or --full-refresh: every row is in scope
      incremental:        the opposite (for a plain model: dbt's is_incremental())
      window, explaining, dual_run_model: the invocation's mode (run_mode)
      lookback_days:      its declared lookback in days (a domain of var lookback_days
                          resolved), or none (a reference table, a model over models)
      watermark:          its stored watermark (a datetime) on an incremental run, or none
      lower_bound:        rule 1's bound on the update time, watermark less lookback, as a SQL
                          timestamp literal, or none when every row is in scope
      landed_bound_at:    a daily run's landing bound (incremental_landed_bound_at), or none
      stage_merge_source: whether the rows to merge are staged (meta stage_merge_source,
                          default true)
    Kept per model for the invocation (invocation_store): the select compiles before the
    materialization's body runs, and both read the same plan. While dbt parses: a plan with
    nothing in scope, not kept (no graph, no relation cache). -#}
{% macro run_plan() %}
    {% if not execute or model is none or model.config is not defined %}
        {{ return({'declared': none, 'scope': none, 'existing_relation': none,
                   'full_build': true, 'incremental': false, 'window': none,
                   'explaining': false,
                   'dual_run_model': backfill_safe.run_mode().dual_run_model,
                   'lookback_days': none, 'watermark': none, 'lower_bound': none,
                   'landed_bound_at': none, 'stage_merge_source': true}) }}
    {% endif %}
    {% set plans = backfill_safe.invocation_store('run_plans') %}
    {% if model.unique_id not in plans %}
        {% do plans.update({model.unique_id: backfill_safe.new_run_plan()}) %}
    {% endif %}
    {{ return(plans[model.unique_id]) }}
{% endmacro %}

{#- What run_plan keeps, built once per model and invocation. -#}
{% macro new_run_plan() %}
    {% set mode = backfill_safe.run_mode() %}
    {% set node = graph.nodes.get(model.unique_id) %}
    {% set of_the_kind = node is not none and model.config.materialized == 'backfill_safe' %}
    {% set declared = backfill_safe.declared_model(node) if of_the_kind else none %}
    {% set existing = adapter.get_relation(this.database, this.schema, this.identifier) %}
    {% if of_the_kind %}
        {% set full_build = existing is none or existing.type != 'table'
            or should_full_refresh() %}
    {% else %}
        {% set full_build = not is_incremental() %}
    {% endif %}
    {% set lookback = declared.lookback if declared is not none else none %}
    {% set lookback_days = none if lookback is none
        else backfill_safe.lookback_days(lookback, model.name) %}
    {% set watermark = none if full_build
        else backfill_safe.get_watermark(this.identifier) %}
    {% set meta = (node.config.meta if node is not none else none) or {} %}
    {% set stage = meta.get('stage_merge_source', true) %}
    {{ return({
        'declared': declared,
        'scope': declared.scope if declared is not none else none,
        'existing_relation': existing,
        'full_build': full_build,
        'incremental': not full_build,
        'window': mode.window,
        'explaining': mode.explaining,
        'dual_run_model': mode.dual_run_model,
        'lookback_days': lookback_days,
        'watermark': watermark,
        'lower_bound': none if watermark is none or lookback_days is none
            else backfill_safe.watermark_less_lookback(watermark, lookback_days),
        'landed_bound_at': none if full_build or mode.window is not none
            else backfill_safe.incremental_landed_bound_at(this.identifier),
        'stage_merge_source': true if stage else false,
    }) }}
{% endmacro %}
