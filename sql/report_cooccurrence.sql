SELECT cause_a, cause_b, failures_with_both, share_of_a FROM cause_cooccurrence
