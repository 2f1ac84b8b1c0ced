"""The shop example's sample and demo, kept out of the installed `pipeline` package: a seeded
generator of source versions (`generate`) and the main job (`main_job`: generate, land, build,
a day of changes, the incremental run, a summary). They import the product, never the reverse.
`python -m sample generate|main` (`bash scripts/main.sh` runs the main job)."""
