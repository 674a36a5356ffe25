"""Model names as they appear in one-line messages."""

from __future__ import annotations

#: Longer names are cut (TFLite converters join a layer's whole history into one name).
SHORT = 60


def short(name: str) -> str:
    """``name`` cut to SHORT characters with an ellipsis."""
    return name if len(name) <= SHORT else name[: SHORT - 3] + "..."
