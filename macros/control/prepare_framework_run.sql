{#- on-run-start. Checks the declaration of every selected model (check_framework_declaration:
    a half-declared model stops the run before anything runs, naming what is missing), then,
    when the invocation selects a model of the framework's kind or a test of one, creates the
    control tables (ensure_control_tables). A run of plain dbt models only sends no statement:
    the framework stays out of the way of a team's other models. -#}
{% macro prepare_framework_run() %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% set needed = [] %}
    {% for unique_id in selected_resources %}
        {% set node = graph.nodes.get(unique_id) %}
        {% if node is not none and node.resource_type == 'model' %}
            {% do backfill_safe.check_framework_declaration(node) %}
            {% if backfill_safe.is_framework_model(node) %}
                {% do needed.append(unique_id) %}
            {% endif %}
        {% elif node is not none and node.resource_type == 'test' %}
            {% for parent in node.depends_on.nodes
                if graph.nodes.get(parent) is not none and backfill_safe.is_framework_model(graph.nodes[parent]) %}
                {% do needed.append(parent) %}
            {% endfor %}
        {% endif %}
    {% endfor %}
    {% if needed %}
        {% do backfill_safe.ensure_control_tables() %}
    {% endif %}
    {{ return('') }}
{% endmacro %}
