{{
    config(
        unique_key='date_key',
        version_column=none,
        meta={'probe_before_staging': true},
    )
}}

-- One row per calendar day between vars date_spine_start and date_spine_end.
{#- Each row is a function of its day alone, so a table that already holds exactly the spine's
    days (their count and both ends: the key is unique) has nothing to merge: an incremental run
    then selects no day instead of comparing all of them with the table (4-5 s of every daily
    run, whatever the data). Moving either var outward extends the calendar on the next run (no
    day is ever removed); a change to how a column is computed needs --full-refresh, as for any
    incremental model. -#}
{%- set spine_start = var("date_spine_start") | string %}
{%- set spine_end = var("date_spine_end") | string %}
{%- set covered = false %}
{%- if execute %}
    {%- set parsed = [] %}
    {%- for name, value in [('date_spine_start', spine_start), ('date_spine_end', spine_end)] %}
        {%- set match = modules.re.fullmatch(
            '([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])', value) %}
        {#- a real day: its day of the month stays in its month -#}
        {%- set day = none %}
        {%- if match %}
            {%- set day = modules.datetime.date(match.group(1) | int, match.group(2) | int, 1)
                + modules.datetime.timedelta(days=(match.group(3) | int) - 1) %}
        {%- endif %}
        {%- if day is none or day.month != match.group(2) | int %}
            {{ exceptions.raise_compiler_error(
                "var '" ~ name ~ "' must be a date YYYY-MM-DD; got: " ~ value) }}
        {%- else %}
            {%- do parsed.append(day) %}
        {%- endif %}
    {%- endfor %}
    {%- if parsed | length == 2 and parsed[0] > parsed[1] %}
        {{ exceptions.raise_compiler_error(
            "var 'date_spine_start' (" ~ spine_start ~ ") is after 'date_spine_end' ("
            ~ spine_end ~ ")") }}
    {%- endif %}
    {%- if is_incremental() and parsed | length == 2 %}
        {%- set held = run_query(
            "select count(*), date_format(min(date_day), 'yyyy-MM-dd'),"
            ~ " date_format(max(date_day), 'yyyy-MM-dd') from " ~ this).rows[0] %}
        {%- set covered = held[0] == (parsed[1] - parsed[0]).days + 1
            and held[1] | string == spine_start and held[2] | string == spine_end %}
    {%- endif %}
{%- endif %}

with

spine as (
    select explode(sequence(
        to_date('{{ spine_start }}'),
        to_date('{{ spine_end }}'),
        interval 1 day
    )) as date_day
),

live as (
    select
        cast(date_format(date_day, 'yyyyMMdd') as int) as date_key,
        date_day,
        year(date_day) as year_number,
        quarter(date_day) as quarter_number,
        month(date_day) as month_number,
        date_format(date_day, 'MMMM') as month_name,
        dayofweek(date_day) as day_of_week,
        date_format(date_day, 'EEEE') as day_name,
        dayofweek(date_day) in (1, 7) as is_weekend
    from spine
    {% if covered %}
        -- the table holds every day of the spine already
        where false
    {% endif %}
)

{{ merge_source('live') }}
