-- node_risk for one as_of (staged_node_risk), replacing that as_of's rows.
DELETE FROM node_risk WHERE as_of = $as_of;
INSERT INTO node_risk BY NAME SELECT * FROM staged_node_risk;
