{#- How a model's rows are tied to the versions of its landed sources, as it declares it under
    config.meta.backfill_safe.scope, checked and normalised. The declaration:
      key:        the column, of the model's rows and of its direct sources, that names one unit
                  of recomputation (a run recomputes every row of each key its changes reach,
                  from all the key's versions), e.g. an order id for a fact of order lines;
                  the model's unique_key when left out
      event_time: '<source>.<table>.<column>': the event time of a key (the date of its rows'
                  event_date is the date of this column on its current version); a direct source
      changes:    the landed sources whose new versions put keys in scope, each either
                  '<source>.<table>' (a direct source: it holds the key column), or
                  {source, key}: a direct source whose column holding the key is named `key`
                  (a raw `id` for the model's `ticket_id`), or
                  {source, through, on[, effective_dated]}: a source reached through a direct
                  source's column `on` (both tables hold it), e.g. a header or a dimension;
                  `effective_dated: true` when a version is in effect from its update time on
                  (type 2): it then reaches only the keys whose event time is at or after it,
                  or every key of `on` when it is the earliest version; and the models of
                  the kind whose runs' changes put keys in scope, each {model[, key]}
                  (scope_model_changes: an aggregate, a mart over a fact). A scope that names
                  models may name landed sources beside them (a mart over a fact and a source:
                  direct ones, or through a direct one, not effective-dated), and then takes no
                  event_time nor lookups, and its model a lookback (the landed sources' window)
      lookups:    (optional) landed sources read for whether a member arrived, whose changes put
                  no key in scope (list them in watermark_exclude too): each
                  {source, on, named_by}: the versions of the members whose `on` a direct
                  source's versions in scope name are read once and cached with the scope
      static:     (optional) inputs the select reads whose changes put no key in scope (a
                  calendar, a list of codes; a full refresh or a restatement reflects them):
                  model names and '<source>.<table>'; every other input it reads must be tied
                  by `changes` or `lookups` (check_inputs_tied)
      awaiting:   (optional) the table's rows in every daily run's scope until what they wait
                  for arrives: a list of the model's columns, each either a dimension key (a
                  row waits while it is the unknown member's key, unknown_member_key) or
                  {flag: <boolean column>} (a row waits while it is true); or, written the old
                  way, a SQL predicate on the table's columns
    Returned as {key, key_columns: {'<source>.<table>': the direct source's key column}, domain,
    event: {source_name, table, column}, direct: [{source_name, table, name, update_column}],
    through: [{source_name, table, update_column, via: {source_name, table},
    on, effective_dated}], lookups: [{source_name, table, on, named_by: {source_name, table}}],
    models: [scope_model_changes' entries], awaiting, static} (event none when models are
    named), or none when `block` (the backfill_safe block) declares no scope. A declaration
    that names what its sources lack is a compiler error naming the model (`where_declared`:
    "model <name> (<file>), config.meta.backfill_safe") and the key; the sources are checked
    only once dbt executes (while it parses there is no graph). -#}
{% macro scope_declaration(where_declared, block, unique_key=none) %}
    {% set scope = (block or {}).get('scope') if block is mapping else none %}
    {% if scope is none %}
        {{ return(none) }}
    {% endif %}
    {% set where = where_declared ~ ".scope" %}
    {% if scope is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ": a mapping with key, event_time and changes "
            ~ "is required; got " ~ scope) }}
    {% endif %}
    {% set known = ['key', 'event_time', 'changes', 'lookups', 'awaiting', 'static'] %}
    {% for name in scope.keys() if name not in known %}
        {{ exceptions.raise_compiler_error(where ~ ": unknown key '" ~ name ~ "' (keys: "
            ~ known | join(', ') ~ ")") }}
    {% endfor %}
    {% for name in ['key', 'changes'] + ([] if backfill_safe.names_models(scope.changes)
        else ['event_time']) if not scope.get(name) and not (name == 'key' and unique_key) %}
        {{ exceptions.raise_compiler_error(where ~ ": '" ~ name ~ "' is missing") }}
    {% endfor %}
    {% set key = scope.get('key') or unique_key %}
    {% if not backfill_safe.is_identifier(key) %}
        {{ exceptions.raise_compiler_error(where ~ ".key: one column name; got " ~ key) }}
    {% endif %}
    {% set changes = scope.changes if scope.changes is sequence and scope.changes is not string
        else [scope.changes] %}
    {#- changes that are models of the kind (scope_model_changes), and landed sources -#}
    {% set split = backfill_safe.scope_change_entries(changes) %}
    {% set model_entries, landed_entries = split.models, split.landed %}
    {% set models = backfill_safe.scope_model_changes(where, model_entries, key)
        if model_entries else [] %}
    {% set awaiting = backfill_safe.awaiting_predicate(
        where ~ ".awaiting", scope.get('awaiting')) %}
    {% set static = scope.get('static') or [] %}
    {% if static is string or static is mapping or static is not sequence
        or static | reject('string') | list %}
        {{ exceptions.raise_compiler_error(where ~ ".static: a list of the inputs whose changes "
            ~ "put no key in scope, each a model's name or '<source>.<table>'; got " ~ static) }}
    {% endif %}
    {% if models %}
        {#- its keys are those its upstream models' runs changed, and those of the landed
            sources' changes when it names some (a mart over a fact and a source); a backfill
            restates the window's event dates of its own rows (rows_over_models) -#}
        {% for name in ['event_time', 'lookups'] if scope.get(name) %}
            {{ exceptions.raise_compiler_error(where ~ "." ~ name ~ ": a scope whose changes name "
                ~ "models of the kind has no " ~ name ~ " (its keys are those its upstream "
                ~ "models' runs changed and those its landed sources' new versions name)") }}
        {% endfor %}
        {#- not kept by its runs (rows_over_models reads no awaiting term): refused rather than
            ignored -#}
        {% if scope.get('awaiting') %}
            {{ exceptions.raise_compiler_error(where ~ ".awaiting: a scope whose changes name "
                ~ "models of the kind keeps no awaiting rows (a row waiting for a member is "
                ~ "recomputed when a change tied to its key arrives: tie the member's source in "
                ~ "changes, through the source that names it); drop awaiting") }}
        {% endif %}
        {% set landed = backfill_safe.scope_landed_changes(where, landed_entries, key) %}
        {% for entry in landed.through if entry.effective_dated %}
            {{ exceptions.raise_compiler_error(where ~ ".changes: " ~ entry.name ~ " is "
                ~ "effective_dated, which needs the scope's event_time: a scope whose changes name "
                ~ "models of the kind has none (drop effective_dated: every key naming a changed "
                ~ "version's `on` is then in scope)") }}
        {% endfor %}
        {% do backfill_safe.scope_references_direct(where, landed, []) %}
        {{ return({'key': key, 'key_columns': landed.key_columns,
                   'domain': block.get('lookback'), 'event': none, 'direct': landed.direct,
                   'through': landed.through, 'lookups': [], 'models': models,
                   'awaiting': awaiting, 'static': static}) }}
    {% endif %}
    {% set event_parts = (scope.event_time | string).split('.') %}
    {% if event_parts | length != 3 %}
        {{ exceptions.raise_compiler_error(where ~ ": event_time must read "
            ~ "'<source>.<table>.<column>'; got '" ~ scope.event_time ~ "'") }}
    {% endif %}
    {% set declared = backfill_safe.scope_landed_changes(where, landed_entries, key) %}
    {% for lookup in scope.get('lookups') or [] %}
        {% if lookup is not mapping or not lookup.get('source') or not lookup.get('on')
            or not lookup.get('named_by') %}
            {{ exceptions.raise_compiler_error(where ~ ".lookups: each is {source, on, named_by};"
                ~ " got " ~ lookup) }}
        {% endif %}
        {% set entry = backfill_safe.scope_contract_of(where ~ ".lookups",
            backfill_safe.scope_source_table(where ~ ".lookups", lookup.source), [lookup.on]) %}
        {% do entry.update({'on': lookup.on,
            'named_by': backfill_safe.scope_source_table(where ~ ".lookups.named_by", lookup.named_by)}) %}
        {% do declared.lookups.append(entry) %}
    {% endfor %}
    {% set event = {'source_name': event_parts[0], 'table': event_parts[1],
                    'column': event_parts[2]} %}
    {% set references = [('event_time', event, [event.column])] %}
    {% for entry in declared.lookups %}
        {% do references.append(('lookups.named_by', entry.named_by, [entry.on])) %}
    {% endfor %}
    {% do backfill_safe.scope_references_direct(where, declared, references) %}
    {{ return({
        'key': key,
        'key_columns': declared.key_columns,
        'domain': block.get('lookback'),
        'event': event,
        'direct': declared.direct,
        'through': declared.through,
        'lookups': declared.lookups,
        'models': [],
        'awaiting': awaiting,
        'static': static,
    }) }}
{% endmacro %}

{#- The landed sources among a scope's changes (`changes`: its entries that name no model), checked:
    {direct: [{source_name, table, name, update_column}], through: [... with via, on,
    effective_dated], lookups: [], key_columns: {'<source>.<table>': the direct source's column
    holding the scope `key`}}. `where`: the scope's place in the declaration, for errors. -#}
{% macro scope_landed_changes(where, changes, key) %}
    {% set declared = {'direct': [], 'through': [], 'lookups': [], 'key_columns': {}} %}
    {% set key_columns = declared.key_columns %}
    {% for change in changes %}
        {% set direct = change is string
            or (change is mapping and 'through' not in change and 'on' not in change) %}
        {% if direct %}
            {#- a direct source: '<source>.<table>', or {source, key} when its column holding
                the model's key has another name -#}
            {% if change is mapping %}
                {% for name in change.keys() if name not in ['source', 'key'] %}
                    {{ exceptions.raise_compiler_error(where ~ ".changes: unknown key '" ~ name
                        ~ "' (keys: source, key for a direct source; source, through, on, "
                        ~ "effective_dated for one reached through it)") }}
                {% endfor %}
                {% for name in ['source', 'key'] if not change.get(name) %}
                    {{ exceptions.raise_compiler_error(where ~ ".changes: '" ~ name
                        ~ "' is missing in " ~ change) }}
                {% endfor %}
                {% if not backfill_safe.is_identifier(change.key) %}
                    {{ exceptions.raise_compiler_error(where ~ ".changes: key: the source's column "
                        ~ "holding the model's key '" ~ key ~ "', one column name; got " ~ change.key) }}
                {% endif %}
            {% endif %}
            {% set key_column = change.key if change is mapping else key %}
            {% set table = backfill_safe.scope_source_table(where ~ ".changes",
                change.source if change is mapping else change) %}
            {% set entry = backfill_safe.scope_contract_of(
                where ~ ".changes", table, [key_column]) %}
            {% do key_columns.update({entry.name: key_column}) %}
            {% do declared.direct.append(entry) %}
        {% elif change is mapping %}
            {% for name in change.keys()
                if name not in ['source', 'through', 'on', 'effective_dated'] %}
                {{ exceptions.raise_compiler_error(where ~ ".changes: unknown key '" ~ name
                    ~ "' (keys: source, through, on, effective_dated)") }}
            {% endfor %}
            {% for name in ['source', 'through', 'on'] if not change.get(name) %}
                {{ exceptions.raise_compiler_error(where ~ ".changes: '" ~ name ~ "' is missing in "
                    ~ change) }}
            {% endfor %}
            {#- a boolean, not text: 'true' in quotes would otherwise count as false -#}
            {% if change.get('effective_dated', false) is not sameas true
                and change.get('effective_dated', false) is not sameas false %}
                {{ exceptions.raise_compiler_error(where ~ ".changes: effective_dated must be true or "
                    ~ "false (a boolean); got '" ~ change.effective_dated ~ "'") }}
            {% endif %}
            {% set entry = backfill_safe.scope_contract_of(where ~ ".changes",
                backfill_safe.scope_source_table(where ~ ".changes", change.source), [change.on]) %}
            {% do entry.update({
                'via': backfill_safe.scope_source_table(where ~ ".changes.through", change.through),
                'on': change.on,
                'effective_dated': change.get('effective_dated', false) is sameas true,
            }) %}
            {% do declared.through.append(entry) %}
        {% else %}
            {{ exceptions.raise_compiler_error(where ~ ".changes: '<source>.<table>' or "
                ~ "{source, through, on}; got " ~ change) }}
        {% endif %}
    {% endfor %}
    {{ return(declared) }}
{% endmacro %}

{#- Checks that what a scope's entries refer to (a `through` entry's `via`, and `references`:
    [(name in the declaration, {source_name, table}, [columns])]) is a direct source of the
    scope (`declared`, scope_landed_changes') holding the columns, or a compiler error naming
    `where` and the entry. -#}
{% macro scope_references_direct(where, declared, references) %}
    {% set direct_names = declared.direct | map(attribute='name') | list %}
    {% set all = references | list %}
    {% for entry in declared.through %}
        {% do all.append(('changes.through', entry.via, [entry.on])) %}
    {% endfor %}
    {% for name, table, columns in all %}
        {% if table.source_name ~ '.' ~ table.table not in direct_names %}
            {{ exceptions.raise_compiler_error(where ~ "." ~ name ~ ": '" ~ table.source_name ~ "."
                ~ table.table ~ "' is not among its direct changes " ~ direct_names) }}
        {% endif %}
        {% do backfill_safe.scope_contract_of(where ~ "." ~ name, table, columns) %}
    {% endfor %}
{% endmacro %}

{#- The changes of a scope that are models of the kind, `{model: <name>}` or `{model: <name>,
    key: <column>}` (the upstream model's column holding this model's scope `key`; the key's own
    name when left out): [{name, unique_id, column, relation, changes}] (`changes`: the table
    where the upstream's runs record what they changed, model_changes_relation), or none when
    no entry names a model (`changes`: the entries that name one; the landed sources beside them
    are scope_landed_changes'). An entry that names a model not of the kind, or a column the
    model does not document, is a compiler error naming `where`. The models are checked only
    once dbt executes. -#}
{% macro scope_model_changes(where, changes, key) %}
    {% if not backfill_safe.names_models(changes) %}
        {{ return(none) }}
    {% endif %}
    {% set found = [] %}
    {% for change in changes %}
        {% for name in change.keys() if name not in ['model', 'key'] %}
            {{ exceptions.raise_compiler_error(where ~ ".changes: unknown key '" ~ name
                ~ "' (keys: model, key for a model of the kind)") }}
        {% endfor %}
        {% set column = change.get('key') or key %}
        {% if not backfill_safe.is_identifier(change.model)
            or not backfill_safe.is_identifier(column) %}
            {{ exceptions.raise_compiler_error(where ~ ".changes: {model: <model name>, key: <its "
                ~ "column holding the key '" ~ key ~ "'>}; got " ~ change) }}
        {% endif %}
        {% set entry = {'name': change.model, 'column': column, 'unique_id': none,
                        'relation': none, 'changes': none} %}
        {% if execute %}
            {% set nodes = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
                | selectattr('name', 'equalto', change.model) | list %}
            {% if not nodes %}
                {{ exceptions.raise_compiler_error(where ~ ".changes: '" ~ change.model
                    ~ "' is no model of the project") }}
            {% endif %}
            {% set upstream = nodes[0] %}
            {% if upstream.config.materialized != 'backfill_safe' %}
                {{ exceptions.raise_compiler_error(where ~ ".changes: model '" ~ change.model
                    ~ "' is not of the framework's kind (it is materialized '"
                    ~ upstream.config.materialized ~ "'): only a model materialized "
                    ~ "'backfill_safe' records what its runs change") }}
            {% endif %}
            {% set documented = upstream.columns.keys() | list %}
            {% if column not in documented %}
                {{ exceptions.raise_compiler_error(where ~ ".changes: model '" ~ change.model
                    ~ "' has no column '" ~ column ~ "' (its documented columns: "
                    ~ documented | join(', ') ~ ")" ~ ("; name the column holding '" ~ key
                    ~ "' with key: <column>" if not change.get('key') else "")) }}
            {% endif %}
            {% do entry.update({
                'unique_id': upstream.unique_id,
                'relation': api.Relation.create(database=upstream.database,
                    schema=upstream.schema, identifier=upstream.alias, type='table'),
                'changes': backfill_safe.model_changes_relation(upstream.alias)}) %}
        {% endif %}
        {% do found.append(entry) %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}

{#- A scope's `changes` (a list, or one entry) split by what each entry names: {models: the
    entries that name a model of the kind ({model[, key]}), landed: the others (landed
    sources)}. The one place that tells them apart. -#}
{% macro scope_change_entries(changes) %}
    {% set entries = [] if changes is none else changes if changes is sequence
        and changes is not string and changes is not mapping else [changes] %}
    {% set split = {'models': [], 'landed': []} %}
    {% for change in entries %}
        {% do split[('models' if change is mapping and 'model' in change
            else 'landed')].append(change) %}
    {% endfor %}
    {{ return(split) }}
{% endmacro %}

{#- True when a scope's `changes` name a model of the kind. -#}
{% macro names_models(changes) %}
    {{ return(backfill_safe.scope_change_entries(changes).models | length > 0) }}
{% endmacro %}

{#- True when a scope's `changes` name a landed source (an entry that names no model). -#}
{% macro names_landed_sources(changes) %}
    {{ return(backfill_safe.scope_change_entries(changes).landed | reject('none') | list
        | length > 0) }}
{% endmacro %}

{#- '<source>.<table>' as {source_name, table}, or a compiler error naming `where`. -#}
{% macro scope_source_table(where, text) %}
    {% set parts = (text | string).split('.') %}
    {% if parts | length != 2 or not parts[0] or not parts[1] %}
        {{ exceptions.raise_compiler_error(where ~ ": a source table reads '<source>.<table>';"
            ~ " got '" ~ text ~ "'") }}
    {% endif %}
    {{ return({'source_name': parts[0], 'table': parts[1]}) }}
{% endmacro %}

{#- {source_name, table, name, update_column} of a landed table that holds `columns`, or a
    compiler error naming `where` and the column. While dbt parses, the columns are not checked
    (landing_contract gives a placeholder). -#}
{% macro scope_contract_of(where, table, columns) %}
    {% if execute and (table.source_name, table.table) not in backfill_safe.landed_tables() %}
        {{ exceptions.raise_compiler_error(where ~ ": '" ~ table.source_name ~ "." ~ table.table
            ~ "' is no landed source table (landed: " ~ backfill_safe.landed_tables() | map('join', '.')
            | join(', ') ~ ")") }}
    {% endif %}
    {% set contract = backfill_safe.landing_contract(table.source_name, table.table) %}
    {% if execute %}
        {% for column in columns if column not in contract.columns %}
            {{ exceptions.raise_compiler_error(where ~ ": source " ~ table.source_name ~ "."
                ~ table.table ~ " has no column '" ~ column ~ "' (its columns: "
                ~ contract.columns | join(', ') ~ ")") }}
        {% endfor %}
    {% endif %}
    {{ return({'source_name': table.source_name, 'table': table.table,
               'name': table.source_name ~ '.' ~ table.table,
               'update_column': contract.update_column}) }}
{% endmacro %}

{#- scope.awaiting as a SQL predicate on the table's columns, or none: a list of the model's
    columns (a dimension key: `<column> = <unknown_member_key>`; {flag: <column>}: the column),
    joined by `or`; a string is taken as the predicate itself (the old way). A compiler error
    naming `where` for anything else. -#}
{% macro awaiting_predicate(where, awaiting) %}
    {% if awaiting is none or awaiting is string %}
        {{ return(awaiting) }}
    {% endif %}
    {% set terms = [] %}
    {% for entry in (awaiting if awaiting is sequence and awaiting is not mapping else [none]) %}
        {% if backfill_safe.is_identifier(entry) %}
            {% do terms.append(entry ~ " = " ~ backfill_safe.unknown_member_key()) %}
        {% elif entry is mapping and entry.keys() | list == ['flag']
            and backfill_safe.is_identifier(entry.flag) %}
            {% do terms.append(entry.flag) %}
        {% else %}
            {{ exceptions.raise_compiler_error(where ~ ": a list of the model's columns, each a "
                ~ "dimension key (waiting while it is the unknown member's) or {flag: <boolean "
                ~ "column>}; got " ~ awaiting) }}
        {% endif %}
    {% endfor %}
    {{ return(terms | join(' or ') if terms else none) }}
{% endmacro %}
