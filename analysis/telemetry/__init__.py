"""Faulty machines from telemetry (docs/methods.md#faulty-machines-from-telemetry): Minder (per-metric LSTM-VAE, peer
distance, continuity, metric priority) beside Aegis' outlier rule and the
baselines the paper compares against.

frames: one job's telemetry aligned, normalised and cut into windows.
vae: the LSTM-VAE. detect: scores, candidates, continuity, alerts (every method).
evaluate: alerts against a truth table.
"""
