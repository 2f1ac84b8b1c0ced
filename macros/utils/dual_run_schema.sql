{#- The scratch schema of a dual run (`pipeline compare`) when `node` is the model it rebuilds
    (vars dual_run_model and dual_run_schema), else none. A project's generate_schema_name
    returns it first, so the comparison's full refresh never lands in the model's own schema;
    `pipeline compare` refuses to run when the project's schema routing does not. -#}
{% macro dual_run_schema(node) -%}
    {%- set dual_run_model = backfill_safe.run_mode().dual_run_model -%}
    {%- if dual_run_model is not none and node is not none and node.name == dual_run_model -%}
        {{ return(backfill_safe.validated_identifier(var('dual_run_schema', 'dual_run')) | trim) }}
    {%- endif -%}
    {{ return(none) }}
{%- endmacro %}
