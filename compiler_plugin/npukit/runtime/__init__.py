"""npukit's C runtime from Python: builds it for the host and runs artifacts.

``npukit.run(artifact, x, runtime="npukit")`` goes through here for the
``static`` and ``embedded`` artifacts compiled for ``host``.
"""

from npukit.runtime.binding import NpukitRuntimeModel

__all__ = ["NpukitRuntimeModel"]
