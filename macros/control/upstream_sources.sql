{#- The unique ids of every source a node reads, directly or through other models. -#}
{% macro upstream_sources(unique_id, found=none) %}
    {% set found = [] if found is none else found %}
    {% set node = graph.nodes.get(unique_id) %}
    {% if node is not none %}
        {% for parent in node.depends_on.nodes %}
            {% if parent.startswith('source.') %}
                {% if parent not in found %}
                    {% do found.append(parent) %}
                {% endif %}
            {% else %}
                {% do backfill_safe.upstream_sources(parent, found) %}
            {% endif %}
        {% endfor %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}
