-- Whether any source names $host (`goodput why` takes a host as well as a job id).
SELECT EXISTS (SELECT 1 FROM node_events WHERE host = $host) OR EXISTS (SELECT 1 FROM node_states WHERE host = $host)
       OR EXISTS (SELECT 1 FROM tickets WHERE host = $host)
