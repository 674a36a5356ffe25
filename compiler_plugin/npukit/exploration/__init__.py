"""``npukit explore``: design-space sweeps of the mynpu NPU for a model,
from one compile (npukit.exploration.explore_model.explore)."""
