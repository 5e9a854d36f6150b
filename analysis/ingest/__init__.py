"""Ingest: source folders read into the warehouse's raw tables, every line accounted for.

- the registry, one declaration per source folder (its parser, raw tables, host names, volume), is
  ``analysis.sources``: below the warehouse and sql/, which derive the raw tables from it.
- ``contract``: what a parser takes and returns (``Parser`` and its optional entry points).
- ``parsers/``: one module per format; pure functions over line frames.
- ``engine`` reads a source directory file by file (``one_file`` one file, the path it shares with
  ``batch``, which reads many small files at once; ``lines`` and
  ``parts`` a file whole or in pieces; ``accounting`` checks each line has one disposition).
- ``options`` (goodput.yaml), ``hosts`` (hostlists), ``timeutil``, ``daily`` (per-day volume),
  ``check`` (`goodput check`) and ``forget`` (`goodput forget`).
"""
