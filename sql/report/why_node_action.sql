-- `goodput why HOST`: what goodput tells the scheduler to do with it (node_actions), and why.
SELECT action, reason, cause, score, since, expires, suggested_component FROM node_actions WHERE host = $host
