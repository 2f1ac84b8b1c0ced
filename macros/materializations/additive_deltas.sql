{#- Delta maintenance of a model over one model of the kind whose measures are sums and counts
    (its declaration's `additive`: additive_declaration). Its daily run reads only what its
    upstream's runs changed since the point its table is current with (the upstream's change
    records, record_model_changes: every changed row as it was before the run and as it is
    after; netted per upstream row: netted_images), evaluates its own select over those images,
    and moves each group's measures by after minus before: a group whose row count reaches 0 is
    deleted, a new group inserted. A min(...) or max(...) column becomes the lesser (greater) of
    the table's value and the after images'; a group where a row that held it left (deleted,
    moved to another group, its value moved away: per_row_body) is recomputed.
    The upstream's table is not read.
    The point (the latest change record applied) is written with the data, atomically: the
    MERGE is staged under `spark.wap.id` (the kind's tables have write.wap.enabled) and then
    made current on main (publish_changes, a fast-forward), so main's current snapshot says in
    its summary which change records its data holds (consumption_mark_select). A run killed
    before that leaves main, and its mark, as they were (the staged snapshot is never current);
    one killed after it leaves both moved (a full build marks its table too: mark_full_build).
    A table whose current snapshot is not marked (a backfill's or a restatement's publish, a
    rollback to an unmarked snapshot, any write but a compaction) is recomputed as before
    (rows_over_models: the keys its upstream's runs changed since its last run), and that run
    marks it.
    A run recomputes instead of applying deltas, and marks the table, when a change record since
    the mark cannot be trusted to be on main: an upstream rebuild, a backfill's run (its branch
    may never be published), a run with no successful run record (its MERGE may have failed
    after the records were written, or the run was killed before its record: delta_batches).
    Within a delta run, a group whose measure is or becomes null (a sum over nulls only) is
    recomputed, by its scope key (more than 1,000 such groups: the run recomputes as above); a
    group the changes take below zero rows fails the run, naming the groups (the table drifted
    from its upstream: a backfill of the model repairs it).
    Returns the rows to merge (rows_to_merge's columns and `_is_deleted`), or none when this run
    recomputes. `plan`: the run_plan; `body`: the model's select (flagged_rows). -#}
{% macro additive_deltas(plan, body) %}
    {% set declared = plan.declared %}
    {% if not backfill_safe.maintained_by_deltas(plan) %}
        {{ return(none) }}
    {% endif %}
    {% set upstream = declared.scope.models[0] %}
    {% set batches = backfill_safe.delta_batches(upstream) %}
    {% if batches.position is not none %}
        {#- what the MERGE marks its snapshot with (the materialization publishes it) -#}
        {% do backfill_safe.invocation_store('consumption_marks').update({this.identifier:
            backfill_safe.consumption_mark_text(batches.position)}) %}
    {% endif %}
    {% if not batches.deltas %}
        {{ return(none) }}
    {% endif %}
    {% if not batches.invocations %}
        {#- nothing recorded upstream since the mark: no row to merge (no MERGE, no mark) -#}
        {{ return("select *, false as _is_deleted from " ~ this ~ " where false") }}
    {% endif %}
    {% set shape = backfill_safe.additive_select_check(declared, body) %}
    {% set key, scope_key = declared.unique_key, declared.scope.key %}
    {% set columns = backfill_safe.column_names(this) %}
    {% set additive, extremes = declared.additive, shape.extremes %}
    {% set groups = columns | reject('in', additive + extremes.keys() | list + [key]) | list %}
    {% set types = backfill_safe.column_types(this) %}
    {% set floats = [] %}
    {% for column in additive if (types[column] | lower).startswith(('float', 'double', 'real')) %}
        {% do floats.append(column) %}
    {% endfor %}
    {#- each upstream row's image at the mark (its first before image since) and now (its last
        after image): what the model's select gives over them -#}
    {% set netted = backfill_safe.netted_images(upstream, batches) %}
    {% set images, per_row = {}, {} %}
    {% set row_body = backfill_safe.per_row_body(model.compiled_code or '', upstream, netted.key)
        if extremes else none %}
    {% for change in ['new', 'old'] %}
        {% do images.update({change: backfill_safe.body_over_images(body, upstream.relation,
            netted[change])}) %}
        {% if row_body %}
            {% do per_row.update({change: backfill_safe.body_over_images(row_body,
                upstream.relation, netted[change])}) %}
        {% endif %}
    {% endfor %}
    {#- per group: the select over the after images and over the before images, their
        difference, and the table's row -#}
    {% set moved %}
        with delta_after as (select * from ({{ images.new }}) as after_images),
        delta_before as (select * from ({{ images.old }}) as before_images),
        delta as (
            select
                coalesce(a.{{ key }}, b.{{ key }}) as {{ key }},
                {%- for column in groups %}
                coalesce(a.{{ column }}, b.{{ column }}) as {{ column }},
                {%- endfor %}
                {%- for column in extremes %}
                a.{{ column }},
                {%- endfor %}
                {%- for column in additive %}
                coalesce(a.{{ column }}, 0) - coalesce(b.{{ column }}, 0) as {{ column }},
                (a.{{ key }} is not null and a.{{ column }} is null)
                    or (b.{{ key }} is not null and b.{{ column }} is null)
                    as _null_{{ loop.index }}{{ "," if not loop.last }}
                {%- endfor %}
            from delta_after as a
            full outer join delta_before as b on a.{{ key }} = b.{{ key }}
        ){{ "," if extremes }}
        {%- if extremes %}
        {#- per group, the most extreme value its rows held at the mark and no longer hold
            there (the row left the group, or its value moved away from the extreme); when the
            select cannot be evaluated row by row, every before image's value -#}
        removed as (
            {%- if row_body %}
            select
                b.{{ key }},
                {%- for column, function in extremes.items() %}
                {{ function }}(case when a._upstream_key is null or not coalesce(
                    a.{{ column }} {{ '<=' if function == 'min' else '>=' }} b.{{ column }},
                    false) then b.{{ column }} end) as {{ column }}{{ "," if not loop.last }}
                {%- endfor %}
            from ({{ per_row.old }}) as b
            left join ({{ per_row.new }}) as a
                on a._upstream_key <=> b._upstream_key and a.{{ key }} = b.{{ key }}
            group by b.{{ key }}
            {%- else %}
            select {{ key }}, {{ extremes.keys() | join(', ') }} from delta_before
            {%- endif %}
        )
        {%- endif %}
        select
            {%- for column in columns %}
            {%- if column == key %}
            delta.{{ key }},
            {%- elif column in additive %}
            cast(coalesce(held.{{ column }}, 0) + delta.{{ column }} as {{ types[column] }})
                as {{ column }},
            {%- elif column in extremes %}
            {{ 'least' if extremes[column] == 'min' else 'greatest' }}(held.{{ column }},
                delta.{{ column }}) as {{ column }},
            {%- else %}
            case when held.{{ key }} is null then delta.{{ column }} else held.{{ column }} end
                as {{ column }},
            {%- endif %}
            {%- endfor %}
            coalesce(held.{{ shape.rows }}, 0) + delta.{{ shape.rows }} = 0 as _is_deleted,
            (
                {%- for column in additive %}
                delta._null_{{ loop.index }} or (held.{{ key }} is not null
                    and held.{{ column }} is null){{ " or" if not loop.last }}
                {%- endfor %}
                {#- a group left with rows whose extreme may be gone -#}
                {%- for column, function in extremes.items() %}
                or (coalesce(held.{{ shape.rows }}, 0) + delta.{{ shape.rows }} > 0
                    and removed.{{ column }} is not null and (held.{{ column }} is null
                    or removed.{{ column }} {{ '<=' if function == 'min' else '>=' }}
                    held.{{ column }}))
                {%- endfor %}
            ) as _recompute,
            {#- a group below no rows, or with none left but measures (an exact type's) -#}
            {%- set exact = additive | reject('in', floats) | list %}
            coalesce(held.{{ shape.rows }}, 0) + delta.{{ shape.rows }} < 0
                {%- if exact %}
                or (coalesce(held.{{ shape.rows }}, 0) + delta.{{ shape.rows }} = 0 and (
                {%- for column in exact %}
                    coalesce(held.{{ column }}, 0) + delta.{{ column }} != 0
                    {{- " or" if not loop.last }}
                {%- endfor %}))
                {%- endif %} as _drifted,
            (
                {%- for column in additive %}
                delta.{{ column }} != 0{{ " or" if not loop.last }}
                {%- endfor %}
                {%- for column, function in extremes.items() %}
                or not ({{ 'least' if function == 'min' else 'greatest' }}(held.{{ column }},
                    delta.{{ column }}) <=> held.{{ column }})
                {%- endfor %}
            ) as _moved
        from delta
        left join {{ this }} as held on held.{{ key }} = delta.{{ key }}
        {%- if extremes %}
        left join removed on removed.{{ key }} = delta.{{ key }}
        {%- endif %}
    {% endset %}
    {#- evaluated once, written to a scratch table (its flags are read, then its rows staged;
        the materialization drops it after the MERGE: drop_staged_deltas). Not Spark's cache: a
        temporary view is analysed again where it is read, and its cached data was not used. -#}
    {% set cached = backfill_safe.staged_deltas_relation() %}
    {% do backfill_safe.ensure_scratch_schema() %}
    {% call statement('stage_deltas', fetch_result=false) %}
        create table {{ cached }} using parquet as {{ moved }}
    {% endcall %}
    {% do backfill_safe.invocation_store('staged_deltas').update({this.identifier: cached}) %}
    {#- one statement: the scope keys of groups to recompute, and of groups the changes
        contradict -#}
    {% set flagged = run_query("select " ~ scope_key ~ ", max(cast(_drifted as int)), "
        ~ "concat_ws(', ', slice(array_sort(collect_set(case when _drifted then cast(" ~ key
        ~ " as string) end)), 1, 3)) from " ~ cached ~ " as moved where _recompute or _drifted "
        ~ "group by " ~ scope_key ~ " limit 1001").rows %}
    {% set drifted = flagged | selectattr(1, 'equalto', 1) | list %}
    {% if drifted or flagged | length > 1000 %}
        {% call statement('drop_staged_deltas', fetch_result=false) %}
            {{ backfill_safe.drop_staged_deltas() }}
        {% endcall %}
    {% endif %}
    {% if drifted %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " (" ~ model.original_file_path
            ~ "): the changes recorded by " ~ upstream.name ~ " since " ~ batches.mark
            ~ " contradict the table for " ~ drifted | length ~ " " ~ scope_key ~ " value(s) "
            ~ "(a group would hold fewer than no rows, or no rows but a measure): "
            ~ (drifted[:10] | map(attribute=0) | map('string')
            | join(', ')) ~ "; groups (" ~ key ~ "): " ~ (drifted[:3] | map(attribute=2)
            | join(', ')) ~ ". The table has drifted from "
            ~ upstream.name ~ "; nothing was merged. Repair it with a backfill of the model over "
            ~ "those groups' dates (`pipeline backfill --select " ~ model.name ~ " --start ... "
            ~ "--end ... --reason ...`) or `dbt run --full-refresh --select " ~ model.name ~ "`") }}
    {% endif %}
    {% if flagged | length > 1000 %}
        {#- too many groups to name: the keys the changes since its last run reach recomputed
            (rows_over_models), as a run that cannot trust its changes does -#}
        {{ return(none) }}
    {% endif %}
    {% do backfill_safe.invocation_store('delta_runs').update({this.identifier: true}) %}
    {% set rows = "select " ~ columns | join(", ") ~ ", _is_deleted from " ~ cached
        ~ " as moved where _moved" %}
    {% if not flagged %}
        {{ return(rows) }}
    {% endif %}
    {#- a sum over nulls, an extreme gone: those scope keys recomputed from the upstream table -#}
    {#- (a null scope key among them: `is null`, an `in` matches no null) -#}
    {% set literals = [] %}
    {% for value in flagged | map(attribute=0) | reject('none') | sort %}
        {% do literals.append(backfill_safe.sql_literal(value)) %}
    {% endfor %}
    {% set terms = [scope_key ~ " in (" ~ literals | join(", ") ~ ")"] if literals else [] %}
    {% if flagged | map(attribute=0) | select('none') | list %}
        {% do terms.append(scope_key ~ " is null") %}
    {% endif %}
    {% set recomputed = "(" ~ terms | join(" or ") ~ ")" %}
    {{ return(rows ~ " and not coalesce(" ~ recomputed ~ ", false)\nunion all\n"
        ~ backfill_safe.recomputed_rows(declared, body, recomputed)) }}
{% endmacro %}


{#- The scratch table a delta run writes its groups' moves to (additive_deltas): one per model
    and invocation, as its staged MERGE source is (staged_merge_source_relation). -#}
{% macro staged_deltas_relation() %}
    {{ return('scratch.' ~ backfill_safe.validated_identifier(this.identifier) ~ '__deltas_'
        ~ (invocation_id | replace('-', ''))[:12]) }}
{% endmacro %}


{#- The statement that drops this model's staged deltas (additive_deltas), and forgets them; ''
    when this run staged none. -#}
{% macro drop_staged_deltas() %}
    {% set staged = backfill_safe.invocation_store('staged_deltas') %}
    {% if this.identifier not in staged %}
        {{ return('') }}
    {% endif %}
    {{ return('drop table if exists ' ~ staged.pop(this.identifier)) }}
{% endmacro %}


{#- True when this run (`plan`: the run_plan) of the model is one its deltas keep: the model
    declares `additive`, the run is a daily or full run of its own table (not a backfill's
    window, a dual run's scratch build, nor `pipeline explain`), and its Spark session is its
    own. The mark is a setting of the session while the MERGE runs (consumption_stamp): on
    dbt-spark's session method (the embedded target's) every dbt thread shares one session, and
    with threads > 1 another model's write in that moment would be staged under the mark and
    never published. Such a run recomputes the groups its changes reach (rows_over_models), and
    says so in the log, once per model and invocation.
    Any run of a model that declares `additive` (a backfill's, a full build...) refuses here a
    select that reads its upstream in a way its deltas could not keep (upstream_alias). -#}
{% macro maintained_by_deltas(plan) %}
    {% if plan.declared is none or not plan.declared.additive %}
        {{ return(false) }}
    {% endif %}
    {% do backfill_safe.upstream_alias(model.compiled_code or '',
        plan.declared.scope.models[0].relation) %}
    {% if plan.window is not none or plan.dual_run_model is not none or plan.explaining %}
        {{ return(false) }}
    {% endif %}
    {#- the invocation's threads (--threads overrides the profile's) and the profile's method -#}
    {% if (adapter.config.threads or 1) | int > 1
        and adapter.config.credentials.method | string | lower == 'session' %}
        {% set said = backfill_safe.invocation_store('deltas_in_a_shared_session') %}
        {% if this.identifier not in said %}
            {% do said.update({this.identifier: true}) %}
            {% do log("model " ~ model.name ~ " (additive): this run adds no deltas and leaves its "
                ~ "table unmarked (it recomputes): with threads " ~ adapter.config.threads
                ~ " its Spark session is shared (dbt-spark's session method), and the mark it "
                ~ "stages its MERGE under is a session setting. Run with --threads 1, or through a "
                ~ "Thrift Server, to add them.", info=true) %}
        {% endif %}
        {{ return(false) }}
    {% endif %}
    {{ return(true) }}
{% endmacro %}


{#- The declaration's `additive` checked against the model (declared_model): a list of its
    documented columns, on a model whose scope's changes are one model of the kind and whose
    select reads nothing else (a join's delta is not the sum of its inputs'). `where`: the
    declaration's place; `scope`: its scope_declaration. Returns the list, empty when none. -#}
{% macro additive_declaration(where, node, additive, scope, only_models, documented) %}
    {% if additive is none %}
        {{ return([]) }}
    {% endif %}
    {% set where = where ~ ".additive" %}
    {% if additive is string or additive is mapping or additive is not iterable or not additive %}
        {{ exceptions.raise_compiler_error(where ~ ": a list of the columns the select computes "
            ~ "as sum(...) or count(...), one of them count(*); got " ~ additive) }}
    {% endif %}
    {% for column in additive if column is not string or column not in documented
        or column == node.config.unique_key %}
        {{ exceptions.raise_compiler_error(where ~ ": '" ~ column ~ "' is not one of the model's "
            ~ "documented columns other than its unique key " ~ documented) }}
    {% endfor %}
    {% set upstreams = scope.models if scope is not none else [] %}
    {% if not only_models or upstreams | length != 1
        or node.depends_on.nodes | list != [upstreams[0].unique_id] %}
        {{ exceptions.raise_compiler_error(where ~ ": a model maintained by deltas reads one "
            ~ "model of the kind and nothing else, and names it alone in scope.changes (its "
            ~ "select reads " ~ node.depends_on.nodes | join(', ') ~ "): remove additive to "
            ~ "recompute the groups its changes reach") }}
    {% endif %}
    {% set wap = ((node.config.get('tblproperties') or {}).get('write.wap.enabled', 'true')
        | string | lower) %}
    {% if wap != 'true' %}
        {{ exceptions.raise_compiler_error(where ~ ": its table needs write.wap.enabled (its "
            ~ "runs stage their MERGE and publish it with the change records it applied); the "
            ~ "model's tblproperties set it to " ~ wap) }}
    {% endif %}
    {{ return(additive | list) }}
{% endmacro %}


{#- The model's compiled select checked against its `additive` columns, as it runs: each is
    `sum(<expression>)` or `count(<expression>)` (not distinct) in the select, one of them
    `count(*)` (its rows: a group reaching 0 is deleted); another column may be `min(...)` or
    `max(...)` (kept from the images: additive_deltas), none another aggregate (count distinct,
    avg...: a delta cannot maintain it), and the select has no `having` (a group it hides would
    be no sum of its rows' deltas). Returns {rows: the count(*) column, extremes: {column: 'min'
    or 'max'}}. -#}
{% macro additive_select_check(declared, body) %}
    {% set re = modules.re %}
    {% set where = "model " ~ model.name ~ " (" ~ model.original_file_path
        ~ "), config.meta.backfill_safe.additive" %}
    {#- an argument with up to three levels of parentheses -#}
    {% set nested = namespace(text="[^()]*") %}
    {% for level in range(3) %}
        {% set nested.text = "(?:[^()]|\\(" ~ nested.text ~ "\\))*" %}
    {% endfor %}
    {% set item = "(?:select|,)\\s*(\\w+)\\s*\\(\\s*(distinct\\s)?(" ~ nested.text
        ~ ")\\)\\s+as\\s+" %}
    {% if re.search("(?is)\\bhaving\\b", re.sub("--[^\\n]*", "", body)) %}
        {{ exceptions.raise_compiler_error(where ~ ": the select has a having clause (a group it "
            ~ "leaves out is not the sum of its rows' changes): filter the rows with where, or "
            ~ "remove additive to recompute the groups the changes reach") }}
    {% endif %}
    {% set rows, extremes = [], {} %}
    {% set aggregates = ['sum', 'count', 'min', 'max', 'avg', 'mean', 'first', 'last',
                         'any_value', 'collect_set', 'collect_list', 'count_if', 'median',
                         'percentile', 'percentile_approx', 'approx_count_distinct', 'stddev',
                         'variance', 'max_by', 'min_by', 'bool_and', 'bool_or', 'every', 'some',
                         'array_agg', 'mode'] %}
    {% for column in backfill_safe.column_names(this) if column != declared.unique_key %}
        {% set found = re.search("(?is)" ~ item ~ re.escape(column) ~ "\\b", body) %}
        {% set function = (found.group(1) | lower) if found else none %}
        {% if column in declared.additive %}
            {% if function not in ['sum', 'count'] or found.group(2) %}
                {{ exceptions.raise_compiler_error(where ~ ": column '" ~ column ~ "' is not "
                    ~ "sum(...) or count(...) of the upstream's rows in the select (found: "
                    ~ (found.group(0) if found else 'no such item') ~ "); additive lists "
                    ~ "sums and counts (a min(...) or max(...) column is kept without being "
                    ~ "listed)") }}
            {% endif %}
            {% if function == 'count' and found.group(3) | trim in ['*', '1'] %}
                {% do rows.append(column) %}
            {% endif %}
        {% elif function in ['min', 'max'] %}
            {% do extremes.update({column: function}) %}
        {% elif function in aggregates or (found and re.search(
                "(?i)\\b(" ~ aggregates | join("|") ~ ")\\s*\\(", found.group(3))) %}
            {{ exceptions.raise_compiler_error(where ~ ": column '" ~ column ~ "' is an aggregate "
                ~ "a delta cannot maintain (" ~ found.group(0) ~ "): list it in additive if it "
                ~ "is a sum or count (min and max are kept, as the whole item), or remove "
                ~ "additive to recompute the groups the changes reach") }}
        {% elif not found and re.search("(?is)\\b(" ~ aggregates | join("|") ~ ")\\s*\\("
                ~ nested.text ~ "\\)\\s+" ~ re.escape(column) ~ "\\s*(,|\\bfrom\\b)", body) %}
            {{ exceptions.raise_compiler_error(where ~ ": column '" ~ column ~ "' is named "
                ~ "without `as` after an aggregate in the select: write `<expression> as "
                ~ column ~ "`, so that what computes it can be checked") }}
        {% endif %}
    {% endfor %}
    {% if not rows %}
        {{ exceptions.raise_compiler_error(where ~ ": none of " ~ declared.additive ~ " is "
            ~ "count(*): a model maintained by deltas counts its groups' rows (add count(*) as "
            ~ "<column> to its select, its yml and additive), so that a group that loses its "
            ~ "last row is deleted") }}
    {% endif %}
    {{ return({'rows': rows[0], 'extremes': extremes}) }}
{% endmacro %}


{#- `body` with its one reference to `relation` (the upstream model's table) replaced by the
    parenthesized `images` (a select of the upstream's columns and more), keeping the alias the
    select gives it, else named as the table (upstream_alias). -#}
{% macro body_over_images(body, relation, images) %}
    {% set re = modules.re %}
    {% set name = relation | string %}
    {% set found = re.findall(re.escape(name) ~ "(?![\\w.])", body) | length %}
    {% if found != 1 %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " (" ~ model.original_file_path
            ~ "): a model maintained by deltas (additive) reads " ~ name ~ " once in its select; "
            ~ "it reads it " ~ found ~ " times") }}
    {% endif %}
    {% set alias = backfill_safe.upstream_alias(body, relation) %}
    {{ return(re.sub(re.escape(name) ~ "(?![\\w.])", ("(" ~ images ~ ")"
        ~ ("" if alias.given else " as " ~ alias.name)) | replace("\\", "\\\\"), body)) }}
{% endmacro %}


{#- The name `body` reads `relation` by: {name, given: true} when the select gives it an alias,
    else {name: the table's identifier, given: false}. A read of it sampled or as of a version
    or a time is refused: its change records are changes of the table as it is. -#}
{% macro upstream_alias(body, relation) %}
    {% set re = modules.re %}
    {% set read = re.search("(?i)" ~ re.escape(relation | string)
        ~ "(?![\\w.])\\s+((as\\s+)?[a-z_]\\w*\\s+)?(tablesample|version\\s+as\\s+of|"
        ~ "timestamp\\s+as\\s+of|(for\\s+)?system_(time|version)\\s+as\\s+of)\\b", body) %}
    {% if read %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " (" ~ model.original_file_path
            ~ "): a model maintained by deltas (additive) reads " ~ relation ~ " as it is; its "
            ~ "select reads it `" ~ read.group(3) ~ "`: remove additive to recompute the groups "
            ~ "its changes reach") }}
    {% endif %}
    {% set aliased = re.search("(?i)" ~ re.escape(relation | string) ~ "(?![\\w.])\\s+(as\\s+)?(?!("
        ~ "where|group|join|left|right|inner|full|cross|on|order|limit|having|union|window|lateral|"
        ~ "natural|anti|semi|sort|cluster|distribute|except|intersect|minus|qualify|pivot|unpivot)"
        ~ "\\b)([a-z_]\\w*)", body) %}
    {{ return({'name': aliased.group(3) if aliased else relation.identifier,
               'given': aliased is not none}) }}
{% endmacro %}


{#- `body` (the model's compiled select; one `select` and one `group by`, comments aside) made
    to give one row per group and upstream row: the upstream's unique key `upstream_key` (a
    column of the upstream) as `_upstream_key` first, and in the grouping. None when the select
    has another shape (a subquery, a union, select distinct): the caller then takes every before
    image as possibly removed. -#}
{% macro per_row_body(body, upstream, upstream_key) %}
    {% set re = modules.re %}
    {% if upstream_key is none %}
        {{ return(none) }}
    {% endif %}
    {#- comments dropped, left to right, so that a quote in a comment or a comment's mark in a
        string literal is what it is; `words`: the select with its literals emptied -#}
    {% set kept = namespace(text="", at=0) %}
    {% for found in re.finditer("(?s)('(?:[^'\\\\]|\\\\.|'')*')|--[^\\n]*|/\\*.*?\\*/", body) %}
        {% set kept.text = kept.text ~ body[kept.at:found.start()]
            ~ (found.group(1) if found.group(1) else " ") %}
        {% set kept.at = found.end() %}
    {% endfor %}
    {% set bare = kept.text ~ body[kept.at:] %}
    {% set words = re.sub("'(?:[^'\\\\]|\\\\.|'')*'", "''", bare) %}
    {#- (a literal that reads `select` or `group by` too: not rewritten) -#}
    {% if re.findall("(?i)\\bselect\\b", bare) | length != 1
        or re.findall("(?i)\\bgroup\\s+by\\b", bare) | length != 1
        or re.search("(?i)\\bselect\\s+(distinct|all)\\b", words) %}
        {{ return(none) }}
    {% endif %}
    {#- a grouping by position or `group by all` would change meaning with a column added -#}
    {% set grouping = re.split("(?i)\\b(having|order|limit|window|qualify|cluster|distribute|sort)"
        ~ "\\b", re.split("(?i)\\bgroup\\s+by\\b", words)[1])[0] %}
    {% for item in grouping.split(",") if item | trim | lower == 'all'
        or re.fullmatch("\\d+", item | trim) %}
        {{ return(none) }}
    {% endfor %}
    {% set row = backfill_safe.upstream_alias(bare, upstream.relation).name ~ "."
        ~ upstream_key %}
    {% set bare = re.sub("(?i)\\bselect\\b", "select " ~ row ~ " as _upstream_key,", bare,
        count=1) %}
    {{ return(re.sub("(?i)\\bgroup\\s+by\\b", "group by " ~ row ~ ",", bare, count=1)) }}
{% endmacro %}


{#- The change records of `upstream` (the scope's model entry) a delta run applies (`batches`:
    delta_batches), netted per upstream row: {new: each row's last after image, old: each row's
    first before image (the row as the table's mark holds it; none when it arrived since),
    key: the upstream's unique key}. Netted, an image no longer true (a row inserted, then
    corrected) is not among them. -#}
{% macro netted_images(upstream, batches) %}
    {% set unique_key = graph.nodes[upstream.unique_id].config.unique_key %}
    {% set unique_key = [unique_key] if unique_key is string else unique_key %}
    {% set records = "select *, row_number() over (partition by " ~ unique_key | join(', ')
        ~ " order by _run_started_at, _change desc) as _earliest, row_number() over (partition "
        ~ "by " ~ unique_key | join(', ') ~ " order by _run_started_at desc, _change) as _latest "
        ~ "from " ~ upstream.changes ~ " where _run_started_at > timestamp'" ~ batches.mark
        ~ "' and _change in ('new', 'old') and " ~ ("_invocation_id in ('"
        ~ batches.invocations | join("', '") ~ "')" if batches.invocations else 'false') %}
    {{ return({
        'new': "select * from (" ~ records ~ ") as records where _change = 'new' and _latest = 1",
        'old': "select * from (" ~ records ~ ") as records where _change = 'old' and _earliest = 1",
        'key': unique_key | join(', ') if unique_key | length == 1 else none}) }}
{% endmacro %}


{#- What this daily run of a model maintained by deltas applies, from its upstream's change
    records (`upstream`: the scope's model entry) and its table's mark (consumption_mark_select):
      deltas:      true when the run applies the change records since the mark as deltas;
                   false when it recomputes (rows_over_models): no valid mark, an upstream
                   rebuild, a backfill's run, a run without a successful run record (its MERGE
                   may not have committed), since the mark
      mark:        the mark's point (the latest change record's run start the table holds)
      invocations: the upstream runs (invocation ids) whose records are applied
      position:    the point the run's MERGE marks the table with: the latest change record's
                   run start it reads, or none when there is none since the mark (no MERGE)
    A run of the upstream in this invocation is trusted: dbt runs this model only after it
    succeeded. -#}
{% macro delta_batches(upstream) %}
    {#- once per model and invocation: the idle check (nothing_since_mark) and the run ask -#}
    {% set found = backfill_safe.invocation_store('delta_batches') %}
    {% if this.identifier not in found %}
        {% do found.update({this.identifier: backfill_safe.delta_batches_found(upstream)}) %}
    {% endif %}
    {{ return(found[this.identifier]) }}
{% endmacro %}


{#- What delta_batches answers, found once per model and invocation. -#}
{% macro delta_batches_found(upstream) %}
    {% if upstream.changes | lower not in backfill_safe.recorded_change_tables() %}
        {{ return({'deltas': false, 'mark': none, 'invocations': [], 'position': none}) }}
    {% endif %}
    {#- one statement: the mark, and per upstream run since it (all as one, without a mark) its
        latest record, whether it rebuilt, whether it is known to have committed -#}
    {% set control = var('control_schema', 'control') %}
    {% set rows = run_query("with marks as (" ~ backfill_safe.consumption_mark_select(this)
        ~ "), changes as (select changes.* from " ~ upstream.changes ~ " as changes cross join "
        ~ "marks where marks.mark is null or changes._run_started_at > cast(marks.mark as "
        ~ "timestamp)) select marks.mark, case when marks.mark is not null then "
        ~ "changes._invocation_id end as invocation, cast(max(changes._run_started_at) as string), "
        ~ "count_if(changes._change = 'rebuilt'), max(changes._invocation_id = '" ~ invocation_id
        ~ "' or succeeded.invocation_id is not null) from marks left join changes on true "
        ~ "left join (select distinct invocation_id from " ~ control ~ ".run_records where "
        ~ "model_name = '" ~ upstream.name ~ "' and status = 'success' and window_start is null) "
        ~ "as succeeded on succeeded.invocation_id = changes._invocation_id "
        ~ "group by marks.mark, invocation").rows %}
    {% set mark = rows[0][0] %}
    {% if mark is none %}
        {{ return({'deltas': false, 'mark': none, 'invocations': [], 'position': rows[0][2]}) }}
    {% endif %}
    {% set batches = rows | rejectattr(1, 'none') | list %}
    {% set trusted = batches | selectattr(3, 'equalto', 0) | selectattr(4) | list %}
    {% set positions = batches | map(attribute=2) | sort | list %}
    {{ return({'deltas': trusted | length == batches | length, 'mark': mark | replace('T', ' '),
               'invocations': trusted | map(attribute=1) | list,
               'position': positions[-1] if positions else none}) }}
{% endmacro %}


{#- For nothing_landed_since_last_run: true when this daily run of a model maintained by deltas
    has nothing to apply (its table holds a mark and its upstream recorded nothing since), false
    when it has, none when it cannot tell by its mark (not such a model or run, no valid mark:
    the caller probes the records since its last run). -#}
{% macro nothing_since_mark(plan) %}
    {% if not backfill_safe.maintained_by_deltas(plan) %}
        {{ return(none) }}
    {% endif %}
    {% set batches = backfill_safe.delta_batches(plan.declared.scope.models[0]) %}
    {% if batches.mark is none %}
        {{ return(none) }}
    {% endif %}
    {{ return(batches.deltas and not batches.invocations) }}
{% endmacro %}


{#- A select of one row, `mark`: the point `relation`'s data is current with, from main's
    snapshots (newest first): the change-record point in the summary (`wap.id`) of its current
    snapshot, or of the latest marked one when only compactions (`replace`) followed it; null
    when no such snapshot leads main (a full build, another write since, a rollback: a snapshot
    made current and then left). -#}
{% macro consumption_mark_select(relation) %}
    {{ return("select max_by(case when on_main and startswith(wap, 'backfill_safe.consumed|') "
        ~ "then split_part(wap, '|', 2) end, made_current_at) as mark from (select "
        ~ "history.made_current_at, history.is_current_ancestor as on_main, "
        ~ "coalesce(snapshots.operation, '') as operation, coalesce(snapshots.summary['wap.id'], "
        ~ "'') as wap from " ~ relation ~ ".history as history left join " ~ relation
        ~ ".snapshots as snapshots on snapshots.snapshot_id = history.snapshot_id) as snapshots "
        ~ "where not on_main or startswith(wap, 'backfill_safe.consumed|') "
        ~ "or operation != 'replace'") }}
{% endmacro %}


{#- The mark a run publishes with its data (read back by consumption_mark_select): the latest change
    record's run start it holds (`position`, as Spark prints a timestamp; its space a `T`, as
    a Spark SQL setting's value is read to the end of the line), and the invocation. -#}
{% macro consumption_mark_text(position) %}
    {{ return('backfill_safe.consumed|' ~ position | replace(' ', 'T') ~ '|' ~ invocation_id) }}
{% endmacro %}


{#- Around the MERGE of a model maintained by deltas (the materialization): `when` 'before'
    stages what follows under the run's mark (spark.wap.id), 'after' resets it and makes the
    staged snapshot main's current one (publish_changes: a fast-forward, one commit on main).
    Nothing for another model, a run with nothing to mark, or a `merge` that writes nothing
    (guarded_merge_sql's select when no row changes: nothing is staged). -#}
{% macro consumption_stamp(when, merge) %}
    {% set mark = backfill_safe.invocation_store('consumption_marks').get(this.identifier) %}
    {% if mark is none or not (merge | trim | lower).startswith(('merge', 'insert')) %}
        {{ return(none) }}
    {% endif %}
    {% set session = backfill_safe.invocation_store('wap_session') %}
    {% if when == 'before' %}
        {% do session.update({'unreset': true}) %}
        {% call statement('stage_under_mark', fetch_result=false) %}
            set spark.wap.id = {{ mark }}
        {% endcall %}
        {{ return(none) }}
    {% endif %}
    {% call statement('unset_mark', fetch_result=false) %}
        reset spark.wap.id
    {% endcall %}
    {% do session.update({'unreset': false}) %}
    {% call statement('publish_under_mark', fetch_result=false) %}
        call spark_catalog.system.publish_changes(
            '{{ this.schema }}.{{ this.identifier }}', '{{ mark }}')
    {% endcall %}
{% endmacro %}


{#- After a full build of a model maintained by deltas (the materialization): its table marked
    with the latest of its upstream's change records (the build read the upstream with every
    committed change in it), by an empty append staged under the mark and published, so its
    first daily run adds what changed since instead of recomputing. Nothing for another model,
    a backfill's or a dual run's build, or an upstream that recorded nothing yet. -#}
{% macro mark_full_build() %}
    {% set plan = backfill_safe.run_plan() %}
    {% if not backfill_safe.maintained_by_deltas(plan) %}
        {{ return(none) }}
    {% endif %}
    {% set upstream = plan.declared.scope.models[0] %}
    {% if upstream.changes | lower not in backfill_safe.recorded_change_tables() %}
        {{ return(none) }}
    {% endif %}
    {% set position = run_query("select cast(max(_run_started_at) as string) from "
        ~ upstream.changes).rows[0][0] %}
    {% if position is none %}
        {{ return(none) }}
    {% endif %}
    {% do backfill_safe.invocation_store('consumption_marks').update({this.identifier:
        backfill_safe.consumption_mark_text(position)}) %}
    {% do backfill_safe.mark_without_rows('select') %}
{% endmacro %}


{#- After the main statement of a run of a model maintained by deltas that read change records
    but merged nothing (`merge`, the statement it sent: no MERGE), its table marked all the same
    (an empty append staged under the mark and published): its data holds those records, and its
    next run, finding nothing since, is idle instead of reading them again. Nothing when the run
    merged or has no mark to publish. -#}
{% macro mark_without_rows(merge) %}
    {% set mark = backfill_safe.invocation_store('consumption_marks').get(this.identifier) %}
    {% if mark is none or (merge | trim | lower).startswith(('merge', 'insert')) %}
        {{ return(none) }}
    {% endif %}
    {% set empty = "insert into " ~ this ~ " select * from " ~ this ~ " where false" %}
    {% do backfill_safe.consumption_stamp('before', empty) %}
    {% call statement('mark_without_rows', fetch_result=false) %}
        {{ empty }}
    {% endcall %}
    {% do backfill_safe.consumption_stamp('after', empty) %}
{% endmacro %}


{#- At the start of every run of a model of the kind (the materialization): when a MERGE staged
    under a mark failed before its reset (consumption_stamp), the session would stage, not
    commit, every later write to a table of the kind; from then on each model resets it first.
    No statement otherwise. -#}
{% macro reset_stale_mark() %}
    {% set session = backfill_safe.invocation_store('wap_session') %}
    {% if session.get('unreset') or session.get('failed') %}
        {% do session.update({'failed': true}) %}
        {% call statement('reset_stale_mark', fetch_result=false) %}
            reset spark.wap.id
        {% endcall %}
    {% endif %}
{% endmacro %}
