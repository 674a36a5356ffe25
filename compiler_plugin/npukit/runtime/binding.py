"""ctypes over a host-built model library (see host_build.model_library)."""

from __future__ import annotations

import ctypes
import time
from ctypes import POINTER, c_char_p, c_size_t, c_uint64, c_void_p
from typing import TYPE_CHECKING

import numpy as np

from npukit.artifact import CompileResult
from npukit.errors import RunError
from npukit.frontends.signature import EntryPoint
from npukit.manifest import long_export_names

if TYPE_CHECKING:
    from npukit.mynpu.simulator import Counters

DEFAULT_ARENA_BYTES = 64 << 20
_ALIGNMENT = 64


class _Options(ctypes.Structure):
    _fields_ = [("arena", c_void_p), ("arena_size", c_size_t), ("full_hal", c_void_p), ("dispatch_hook", c_void_p),
                ("dispatch_hook_user_data", c_void_p)]


class _StringView(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_char)), ("size", c_size_t)]


_DispatchHook = ctypes.CFUNCTYPE(None, c_void_p, _StringView, ctypes.c_int)


class _Stats(ctypes.Structure):
    _fields_ = [
        ("arena_capacity", c_size_t),
        ("arena_in_use", c_size_t),
        ("arena_high_water_mark", c_size_t),
        ("dispatch_count", c_uint64),
        ("invocation_count", c_uint64),
        ("arena_invalid_frees", c_size_t),
        ("buffer_plan_size", c_size_t),
        ("buffer_plan_high_water_mark", c_size_t),
    ]


def _declare(lib: ctypes.CDLL) -> None:
    from npukit.mynpu.simulator import _Counters

    lib.npukit_runtime_mynpu_counters.restype = c_void_p
    lib.npukit_runtime_mynpu_counters.argtypes = [c_void_p, POINTER(_Counters), POINTER(_Counters)]
    lib.npukit_runtime_create.restype = c_void_p
    lib.npukit_runtime_create.argtypes = [POINTER(_Options), POINTER(c_void_p)]
    lib.npukit_runtime_destroy.restype = None
    lib.npukit_runtime_destroy.argtypes = [c_void_p]
    lib.npukit_model_load.restype = c_void_p
    lib.npukit_model_load.argtypes = [c_void_p]
    lib.npukit_model_run.restype = c_void_p
    lib.npukit_model_run.argtypes = [c_void_p, POINTER(c_void_p), POINTER(c_void_p)]
    lib.npukit_runtime_stats.restype = _Stats
    lib.npukit_runtime_stats.argtypes = [c_void_p]
    lib.iree_status_format.restype = c_size_t
    lib.iree_status_format.argtypes = [c_void_p, c_char_p, c_size_t]
    lib.iree_status_free.restype = None
    lib.iree_status_free.argtypes = [c_void_p]


class NpukitRuntimeModel:
    """A static or embedded artifact running on npukit's runtime in this process.

    With ``profile_dispatches``, ``dispatch_seconds`` sums each export's wall
    time over the runs (the runtime's dispatch hook; it adds a call into
    Python around every dispatch, so totals are not the model's latency),
    under IREE's name for the export (the module's code has short names)."""

    def __init__(self, result: CompileResult, arena_bytes: int = DEFAULT_ARENA_BYTES,
                 profile_dispatches: bool = False):
        from npukit.runtime.host_build import model_library

        self.result = result
        self.entry: EntryPoint = result.entry_points[0]
        self._lib = ctypes.CDLL(str(model_library(result)), mode=ctypes.RTLD_LOCAL)
        _declare(self._lib)
        self._arena = ctypes.create_string_buffer(arena_bytes + _ALIGNMENT)
        base = ctypes.addressof(self._arena)
        aligned = (base + _ALIGNMENT - 1) & ~(_ALIGNMENT - 1)
        full_hal = ctypes.addressof(ctypes.c_char.in_dll(self._lib, "npukit_full_hal"))
        options = _Options(aligned, arena_bytes, full_hal)
        self.dispatch_seconds: dict[str, float] = {}
        self._long_names = long_export_names(result.manifest)
        if profile_dispatches:
            self._hook = _DispatchHook(self._on_dispatch)  # kept alive as long as the runtime
            self._started = 0
            options.dispatch_hook = ctypes.cast(self._hook, c_void_p)
        runtime = c_void_p()
        self._check(self._lib.npukit_runtime_create(ctypes.byref(options), ctypes.byref(runtime)), "creating")
        self._runtime = runtime
        self._check(self._lib.npukit_model_load(self._runtime), "loading the module")

    def _on_dispatch(self, _user: int, name: _StringView, done: int) -> None:
        now = time.perf_counter_ns()
        if not done:
            self._started = now
            return
        export = ctypes.string_at(name.data, name.size).decode()
        export = self._long_names.get(export, export)
        self.dispatch_seconds[export] = self.dispatch_seconds.get(export, 0.0) + (now - self._started) * 1e-9

    def _check(self, status: int | None, what: str) -> None:
        if not status:
            return
        buffer = ctypes.create_string_buffer(1024)
        self._lib.iree_status_format(status, buffer, len(buffer))
        self._lib.iree_status_free(status)
        raise RunError(f"npukit runtime: {what} {self.result.name}: {buffer.value.decode(errors='replace')}")

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        inputs = (c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        outputs = [np.empty([int(d) for d in t.shape], dtype=np.dtype(t.dtype)) for t in self.entry.outputs]
        output_ptrs = (c_void_p * max(len(outputs), 1))(*[o.ctypes.data for o in outputs])
        self._check(self._lib.npukit_model_run(self._runtime, inputs, output_ptrs), "running")
        return outputs

    def stats(self) -> dict:
        s = self._lib.npukit_runtime_stats(self._runtime)
        return {name: int(getattr(s, name)) for name, _ in _Stats._fields_}

    def npu_counters(self) -> tuple[Counters, Counters]:
        """The mynpu device's counters: the last NPU dispatch's and the totals
        since the runtime was created (RunError without a mynpu device)."""
        from npukit.mynpu.simulator import Counters, _Counters

        last, total = _Counters(), _Counters()
        self._check(self._lib.npukit_runtime_mynpu_counters(self._runtime, ctypes.byref(last), ctypes.byref(total)),
                    "reading the NPU counters of")
        return Counters._from(last), Counters._from(total)

    def close(self) -> None:
        if getattr(self, "_runtime", None):
            self._lib.npukit_runtime_destroy(self._runtime)
            self._runtime = None

    def __del__(self) -> None:
        self.close()
