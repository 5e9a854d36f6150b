"""Fabric port counters: cumulative counters turned into deltas, and the deltas that mean a bad link
turned into node events (issue: job logs and network counters)."""
