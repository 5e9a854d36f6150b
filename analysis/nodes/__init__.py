"""Node models and what is done about them: lemon signals and scores, the incident model (Cox-Time and its
baselines), the validation selector, the node_actions ladder and its exports, and models on a cadence."""
