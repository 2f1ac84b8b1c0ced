{#- The mode of this dbt invocation, asked once and answered to every step of every model: the
    one place that reads the run's vars.
      window:         a backfill's window, {start, end} (backfill_window: vars backfill_start,
                      backfill_end, checked), or none for a daily run;
      explaining:     true under `pipeline explain` (explaining: var explain_next_run);
      dual_run_model: the model a dual run builds into its scratch schema (var dual_run_model,
                      `pipeline compare`), or none.
    Kept for the invocation (invocation_store) once dbt executes; while it parses (a project's
    generate_schema_name asks for the dual run), answered afresh. -#}
{% macro run_mode() %}
    {% if not execute %}
        {{ return({'window': none, 'explaining': false,
                   'dual_run_model': var('dual_run_model', none)}) }}
    {% endif %}
    {% set kept = backfill_safe.invocation_store('run_mode') %}
    {% if not kept %}
        {% do kept.update({
            'window': backfill_safe.backfill_window(),
            'explaining': backfill_safe.explaining(),
            'dual_run_model': var('dual_run_model', none),
        }) %}
    {% endif %}
    {{ return(kept) }}
{% endmacro %}
