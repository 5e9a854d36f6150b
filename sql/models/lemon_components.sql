-- The component to look at first on each host, as of $as_of: the one its
-- repair tickets name most often, else the one its most frequent incident
-- cause points to (Meta's root-cause classes: GPU, PCIe, DIMM, NIC/optics, BIOS, ...).
WITH from_tickets AS (
    SELECT host, component FROM tickets WHERE opened < $as_of AND component IS NOT NULL AND component <> ''
    GROUP BY host, component
    QUALIFY row_number() OVER (PARTITION BY host ORDER BY count(*) DESC, max(opened) DESC, component) = 1
), from_causes AS (
    SELECT host, CASE cause
        WHEN 'gpu_unavailable' THEN 'GPU or PCIe'  WHEN 'gpu_memory' THEN 'GPU'  WHEN 'nvlink' THEN 'GPU baseboard (NVLink)'
        WHEN 'gpu_driver_firmware' THEN 'GPU firmware / BIOS'  WHEN 'pcie' THEN 'PCIe'  WHEN 'host_memory' THEN 'DIMM'
        WHEN 'infiniband_link' THEN 'NIC or optics'  WHEN 'ethernet_link' THEN 'NIC'
        WHEN 'filesystem_mount' THEN 'NIC or filesystem client'  WHEN 'system_services' THEN 'OS image' END AS component
    FROM incidents_as_of WHERE first_event < $as_of
    GROUP BY host, cause
    QUALIFY row_number() OVER (PARTITION BY host ORDER BY count(*) DESC, max(first_event) DESC, cause) = 1
)
SELECT host, coalesce(t.component, c.component) AS suggested_component
FROM from_causes c FULL JOIN from_tickets t USING (host)
