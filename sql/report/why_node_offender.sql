-- `goodput why HOST`: its latest repeat-offender verdict, when it is one.
SELECT * FROM repeat_offenders WHERE host = $host ORDER BY as_of DESC LIMIT 1
