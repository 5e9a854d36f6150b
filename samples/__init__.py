"""The demo's hand-made source directory (demo_source/), shipped as package data: `goodput demo --sample` reads it."""
