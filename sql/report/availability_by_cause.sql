-- Node outages per cause over the whole data span (the view availability_by_cause), in words: unplanned causes
-- first, most node-hours out first.
SELECT cause, coalesce(label, cause) AS label, coalesce(component, 'Unknown') AS component, planned, outages, nodes,
       node_hours_out, share_of_hours_out, mttr_hours, median_ttr_hours, mtbf_hours, per_1000_node_days
FROM availability_by_cause
ORDER BY planned, node_hours_out DESC, outages DESC, cause
