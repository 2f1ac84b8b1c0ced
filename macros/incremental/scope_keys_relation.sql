{#- The session's temporary view of this model's keys in scope (scope_keys_cached): the
    invocation's shared view of the changed keys when the run's keys are those
    (invocation_store('scope_relations')), else the model's own. -#}
{% macro scope_keys_relation() %}
    {% set shared = backfill_safe.invocation_store('scope_relations').get(this.identifier) %}
    {{ return(shared['keys'] if shared
        else 'scope_keys__' ~ backfill_safe.validated_identifier(this.identifier)) }}
{% endmacro %}

{#- The session's temporary view of the landed versions of landed table `source_name`.`table`
    that this model's run reads (scope_keys_cached makes it, versions_in_scope reads it): those
    of its keys in scope for a direct source of its scope, those of the members the versions
    in scope name for a lookup. The shared view when the run's keys are the shared ones. -#}
{% macro scope_versions_relation(source_name, table) %}
    {% set shared = backfill_safe.invocation_store('scope_relations').get(this.identifier) %}
    {% if shared %}
        {{ return(shared['versions'][source_name ~ '.' ~ table]) }}
    {% endif %}
    {{ return('scope_versions__' ~ backfill_safe.validated_identifier(source_name) ~ '__'
        ~ backfill_safe.validated_identifier(table) ~ '__' ~ backfill_safe.validated_identifier(this.identifier)) }}
{% endmacro %}

{#- The subquery of this model's keys in scope that scope_keys_cached returns: the text by which
    versions_in_scope recognises the run's scope. -#}
{% macro scope_keys_cache_subquery() %}
    {% set scope = backfill_safe.run_plan().scope %}
    {{ return('select ' ~ scope.key ~ ' from ' ~ backfill_safe.scope_keys_relation()) }}
{% endmacro %}

{#- The names of the cached temporary views a run shares between the models of one dbt
    invocation that compute the same scope (scope_shared_cache): `changed`, the keys the SQL
    `changed` finds, and `versions[<source>.<table>]`, the landed versions of those keys (each
    direct source) or of the members they name (each lookup). Named after this dbt invocation
    and a hash of the SQL (whose literals are the model's lower and landing bounds) and of the
    tables cached, so only models of one invocation that compute the same keys share them.
    `of_domain` is a regular expression matching every invocation's shared views of the
    domain (of the lookback: a named domain, or `lookback_<n>_days` for a model's own window),
    its group 1 the invocation's part, which is `invocation` in this one's names. -#}
{% macro scope_shared_relations(scope, changed) %}
    {% set invocation = (invocation_id | replace('-', ''))[:12] | lower %}
    {% set cached = (scope.direct + scope.lookups) | map(attribute='name') | list %}
    {#- the lookback: a domain's name, or the model's own window in days -#}
    {% set domain = ('lookback_' ~ scope.domain ~ '_days') if scope.domain is integer
        else backfill_safe.validated_identifier(scope.domain) | lower %}
    {% set suffix = domain ~ '_' ~ invocation ~ '_'
        ~ local_md5((changed | trim) ~ ' ' ~ scope.key ~ ' ' ~ cached | join(' '))[:12] %}
    {% set versions = {} %}
    {% for table in scope.direct + scope.lookups %}
        {% do versions.update({table.name: 'scope_shared_versions_'
            ~ backfill_safe.validated_identifier(table.source_name) ~ '_' ~ backfill_safe.validated_identifier(table.table)
            ~ '__' ~ suffix}) %}
    {% endfor %}
    {{ return({
        'changed': 'scope_shared_changed__' ~ suffix,
        'versions': versions,
        'of_domain': 'scope_shared_[a-z0-9_]+?__' ~ domain
            ~ '_([0-9a-f]{12})_[0-9a-f]{12}',
        'invocation': invocation,
    }) }}
{% endmacro %}
