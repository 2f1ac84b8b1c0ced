-- Watermark drift (macro watermark_drift): fails with one row per model of the framework's kind
-- whose stored watermark is later than every loadable version that could have set it, naming
-- the model, the watermark, the greatest loadable update time and each quarantined version
-- responsible. Every model of the kind, in any project that installs the framework: no yml
-- (enabled here: the package's other tests are its examples', dbt_project.yml).
{{ config(enabled=true) }}
{{ backfill_safe.watermark_drift() }}
