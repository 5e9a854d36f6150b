-- The nodes the node lifecycle holds escalated (sent for RMA or inspection) and since when.
SELECT host, since FROM node_lifecycle_now WHERE state = 'escalated' ORDER BY host
