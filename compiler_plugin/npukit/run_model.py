"""``npukit.run``: runs a compiled artifact on inputs and returns its outputs."""

from __future__ import annotations

import math
import re
from pathlib import Path

import ml_dtypes  # noqa: F401 - gives numpy the names bfloat16 and float8_* (an iree-base-runtime dependency)
import numpy as np

from npukit.artifact import CompileResult, load_artifact
from npukit.errors import ArtifactError, RunError
from npukit.frontends.signature import EntryPoint

RUNTIMES = ("stock", "npukit")
BINDING_ALIGNMENT = 64


def _entry_point(result: CompileResult, function: str | None) -> EntryPoint:
    entries = result.entry_points
    if function is None:
        if len(entries) != 1:
            names = ", ".join(e.name for e in entries)
            raise RunError(f"{result.name} has several entry points ({names}); choose one with function=")
        return entries[0]
    for e in entries:
        if e.name == function:
            return e
    names = ", ".join(e.name for e in entries)
    raise RunError(f"{result.name} has no entry point '{function}' (it has: {names})")


def check_inputs(entry: EntryPoint, inputs: tuple) -> list[np.ndarray]:
    """Inputs as arrays of the declared dtypes and shapes; RunError otherwise."""
    if len(inputs) != len(entry.inputs):
        raise RunError(f"{entry.name} takes {len(entry.inputs)} input(s), got {len(inputs)}")
    arrays = []
    for i, (value, spec) in enumerate(zip(inputs, entry.inputs)):
        label = f"input {i}" + (f" ('{spec.name}')" if spec.name else "")
        want = np.dtype(spec.dtype)
        if isinstance(value, np.ndarray):
            if value.dtype != want:
                raise RunError(f"{label} has dtype {value.dtype}, the model takes {want}")
            array = value
        else:
            array = np.asarray(value, dtype=want)
        shape = list(array.shape)
        if len(shape) != len(spec.shape) or any(d is not None and d != s for d, s in zip(spec.shape, shape)):
            declared = "x".join("?" if d is None else str(d) for d in spec.shape)
            raise RunError(f"{label} has shape {'x'.join(map(str, shape)) or 'scalar'}, the model takes {declared}")
        # Not np.ascontiguousarray: it gives a 0-d array a dimension.
        arrays.append(array if array.flags.c_contiguous else array.copy(order="C"))
    return arrays


def load_npy(path: "str | Path") -> np.ndarray:
    """An input array from a .npy file; RunError naming the file otherwise."""
    p = Path(path)
    if not p.is_file():
        raise RunError(f"{p}: no such input file")
    try:
        return np.load(p, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise RunError(f"{p}: not a .npy array: {e}") from None


def _as_declared(array: np.ndarray, dtype: str) -> np.ndarray:
    """IREE's runtime reports signless integers as signed: give the model's own
    integer type (uint8 for a uint8 output) where only the signedness differs."""
    want = np.dtype(dtype)
    if array.dtype != want and array.dtype.kind in "iub" and want.kind in "iub" and array.dtype.itemsize == want.itemsize:
        return array.view(want)
    return array


class LoadedModel:
    """A compiled artifact loaded once and called many times: ``model(*inputs)``."""

    def __init__(self, result: CompileResult, entry: EntryPoint, function) -> None:
        self.result = result
        self.entry = entry
        self._function = function
        # What a call checks first: inputs of exactly the declared dtypes and
        # (static) shapes, C-contiguous, pass as they are; anything else goes
        # through check_inputs, which converts or says what is wrong.
        self._declared = [(np.dtype(s.dtype), tuple(s.shape)) for s in entry.inputs]
        self._copies = isinstance(function, _BufferViewCall)

    def _inputs(self, inputs: tuple) -> "tuple | list[np.ndarray]":
        # A plain loop: a generator under all() cost about a microsecond a call.
        if len(inputs) == len(self._declared):
            for x, (dtype, shape) in zip(inputs, self._declared):
                if not (type(x) is np.ndarray and x.dtype == dtype and x.shape == shape and x.flags.c_contiguous):
                    break
            else:
                return inputs
        return check_inputs(self.entry, inputs)

    def __call__(self, *inputs) -> list[np.ndarray]:
        arrays = self._inputs(inputs)
        try:
            outputs = self._function(*arrays)
        except Exception as e:
            raise RunError(f"running {self.entry.name} failed: {e}") from None
        if self._copies:
            return outputs  # copies already, of the declared dtypes
        if not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        # Copies: a host view of a device buffer dies with the runtime's context.
        arrays = [np.array(o.to_host() if hasattr(o, "to_host") else o) for o in outputs]
        return [_as_declared(a, spec.dtype) for a, spec in zip(arrays, self.entry.outputs)] + arrays[
            len(self.entry.outputs):
        ]


class _BufferViewCall:
    """An entry point on IREE's VM called with buffer views made straight
    from the input arrays, its outputs copied straight out of theirs into
    arrays of the declared dtypes. IREE's generic ``FunctionInvoker`` goes
    through per-call argument descriptors and ``DeviceArray`` wrappers, and
    the outputs were then copied again: about 7 us a call, a fifth of a
    small model's (kws_int8: 36 -> 30 us). Taken where the function declares
    itself synchronous with plain numeric tensors in and out (``fits``).

    A call does only what it must beyond IREE's invoke: the bound methods,
    types and constants are looked up once here and the allocation's
    arguments passed by position. Where the declaration gives every input's
    shape, each input's buffer view is made once, at load, on an array of
    npukit's own that IREE imports without a copy, and a call copies the
    input into that array (the VM function is synchronous: it has read its
    inputs when the invoke returns); a lock taken without waiting keeps the
    arrays to one call at a time, and a call that finds it taken allocates
    buffer views of its own. An output is copied out of its mapped buffer
    through the buffer protocol (``np.frombuffer``) and shaped as the
    declaration says where it gives every dimension (``MappedMemory.asarray``
    alone took 2 us a call). The fastest of 20,000 calls of the three-layer
    hello_world_int8: 14.2 -> 10.0 us (IREE's invoke alone 4.9 us)."""

    def __init__(self, ctx, module_name: str, entry: EntryPoint) -> None:
        import threading

        import iree.runtime as ireert

        device = ctx.config.device
        self._list = ireert.VmVariantList
        self._buffer_view = ireert.HalBufferView
        self._allocate = device.allocator.allocate_buffer_copy
        self._invoke = ctx.vm_context.invoke
        self._function = ctx.modules[module_name].vm_module.lookup_function(entry.name)
        # allocate_buffer_copy(memory_type, allowed_usage, device, buffer, element_type)
        self._placement = (ireert.MemoryType.DEVICE_LOCAL, ireert.BufferUsage.DEFAULT, device)
        self._in_types = [_element_type(s.dtype) for s in entry.inputs]
        self._out_dtypes = [np.dtype(s.dtype) for s in entry.outputs]
        arg_shapes, result_shapes = _declared_shapes(self._function)
        if len(arg_shapes) != len(entry.inputs) or len(result_shapes) != len(entry.outputs):
            arg_shapes, result_shapes = [None] * len(entry.inputs), [None] * len(entry.outputs)
        # (dtype, shape from the declaration or None where a dimension is dynamic)
        self._outputs = list(enumerate(zip(self._out_dtypes, result_shapes)))
        self._lock = threading.Lock()
        self._args = None
        self._staged: list[np.ndarray] = []
        if all(shape is not None and math.prod(shape) > 0 for shape in arg_shapes):
            self._args = self._list(len(entry.inputs))
            host_visible = ireert.MemoryType.DEVICE_LOCAL | ireert.MemoryType.HOST_VISIBLE
            for spec, shape, element_type in zip(entry.inputs, arg_shapes, self._in_types):
                staged = _aligned_array(shape, np.dtype(spec.dtype))
                buffer = device.allocator.import_host_allocation(staged, host_visible, ireert.BufferUsage.DEFAULT)
                self._args.push_ref(self._buffer_view(buffer, list(shape), element_type))
                self._staged.append(staged)

    @staticmethod
    def fits(function, entry: EntryPoint) -> bool:
        """Whether the VM function declares itself synchronous with that
        many tensors in and out, of types a buffer view holds byte for byte."""
        try:
            declaration = function.vm_function.reflection["iree.abi.declaration"]
        except (AttributeError, KeyError, TypeError):
            return False
        found = re.fullmatch(r"sync func @[\w$.-]+\((.*)\) -> \((.*)\)", declaration.strip())
        if found is None:
            return False
        args, results = (re.split(r",\s*(?=%)", part) if part else [] for part in found.groups())
        if len(args) != len(entry.inputs) or len(results) != len(entry.outputs):
            return False
        if not all(re.fullmatch(r"%\w+: tensor<[^<>]*>", a) for a in args + results):
            return False
        return all(np.dtype(s.dtype).kind in "iuf" and _element_type(s.dtype) is not None
                   for s in (*entry.inputs, *entry.outputs))

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        if self._args is None or not self._lock.acquire(False):
            return self._outputs_of(self._allocated(arrays))
        try:
            for staged, array in zip(self._staged, arrays):
                staged[...] = array
            return self._outputs_of(self._args)
        finally:
            self._lock.release()

    def _allocated(self, arrays: tuple) -> "object":
        memory_type, usage, device = self._placement
        args = self._list(len(arrays))
        for array, element_type in zip(arrays, self._in_types):
            args.push_ref(self._allocate(memory_type, usage, device, array, element_type))
        return args

    def _outputs_of(self, args) -> list[np.ndarray]:
        results = self._list(len(self._out_dtypes))
        self._invoke(self._function, args, results)
        if len(results) != len(self._out_dtypes):
            raise RuntimeError(f"{len(results)} results, the entry point declares {len(self._out_dtypes)}")
        outputs = []
        for i, (dtype, shape) in self._outputs:
            view = results.get_as_object(i, self._buffer_view)
            if shape is None:
                shape = view.shape
            try:
                # A copy: the buffer is the VM's.
                outputs.append(np.frombuffer(view.map(), dtype).reshape(shape).copy())
            except ValueError:
                raise RuntimeError(f"result {i} is not {dtype} of shape {shape} ({view.byte_length} bytes)") from None
        return outputs


def _aligned_array(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A zeroed array of ``shape`` whose data starts on a 64-byte boundary:
    IREE's code generation assumes its bindings' base addresses are (the
    alignment it gives ``hal.interface.binding.subspan``)."""
    count = math.prod(shape) * dtype.itemsize
    raw = np.zeros(count + BINDING_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % BINDING_ALIGNMENT
    return raw[start:start + count].view(dtype).reshape(shape)


def _declared_shapes(function) -> tuple[list, list]:
    """Each argument's and result's shape as the VM function's declaration
    gives it (``tensor<1x98x40xi8>``: (1, 98, 40)), None where a dimension
    is dynamic."""
    declaration = function.reflection.get("iree.abi.declaration", "")
    found = re.fullmatch(r"sync func @[\w$.-]+\((.*)\) -> \((.*)\)", declaration.strip())
    if found is None:  # a form this reading does not know: no shapes (the caller then reads each result's own)
        return [], []
    shapes = []
    for part in found.groups():
        listed = []
        for value in re.split(r",\s*(?=%)", part) if part else []:
            tensor = re.fullmatch(r"%\w+: tensor<([^<>]*)>", value)
            dims = tensor.group(1).split("x")[:-1] if tensor else ["?"]
            listed.append(tuple(int(d) for d in dims) if all(d.isdigit() for d in dims) else None)
        shapes.append(listed)
    return shapes[0], shapes[1]


def _element_type(dtype: str):
    from iree.runtime.array_interop import map_dtype_to_element_type

    return map_dtype_to_element_type(np.dtype(dtype))


def _load_stock(result: CompileResult, entry: EntryPoint) -> LoadedModel:
    import iree.runtime as ireert

    if result.mode != "vmfb":
        raise ArtifactError(
            f"{result.directory}: IREE's stock runtime runs .vmfb artifacts; this one is '{result.mode}' "
            "(compile with output='vmfb')"
        )
    if result.manifest["target"]["cpu"] != "host":
        raise ArtifactError(
            f"{result.directory}: compiled for {result.target}, which does not run on this machine"
        )
    config = ireert.Config("local-sync")
    ctx = ireert.SystemContext(config=config)
    vm_module = ireert.VmModule.copy_buffer(ctx.instance, result.path("vmfb").read_bytes())
    ctx.add_vm_module(vm_module)
    try:
        function = ctx.modules[result.manifest["vm_module"]][entry.name]
    except (KeyError, AttributeError) as e:
        raise ArtifactError(f"{result.directory}: the module has no function {entry.name}: {e}") from None
    if _BufferViewCall.fits(function, entry):
        function = _BufferViewCall(ctx, result.manifest["vm_module"], entry)
    model = LoadedModel(result, entry, function)
    model._context = ctx  # keeps the VM context alive with the function
    return model


def _load_npukit(result: CompileResult, entry: EntryPoint) -> LoadedModel:
    from npukit.runtime.binding import NpukitRuntimeModel

    if entry.name != result.entry_points[0].name:
        raise RunError(f"npukit's runtime runs the first entry point ({result.entry_points[0].name}) of an artifact")
    native = NpukitRuntimeModel(result)
    model = LoadedModel(result, entry, native)
    model.native = native
    return model


def load(artifact, runtime: str = "stock", function: str | None = None) -> LoadedModel:
    """Loads ``artifact`` (a CompileResult, its directory or manifest) for repeated calls.

    ``runtime="stock"`` runs a .vmfb with IREE's runtime; ``runtime="npukit"``
    runs a static or embedded artifact compiled for the host on npukit's C
    runtime (built for this machine on first use).
    """
    result = load_artifact(artifact)
    if runtime not in RUNTIMES:
        raise RunError(f"unknown runtime '{runtime}'; available: {', '.join(RUNTIMES)}")
    entry = _entry_point(result, function)
    if runtime == "npukit":
        return _load_npukit(result, entry)
    return _load_stock(result, entry)


def run(artifact, *inputs, runtime: str = "stock", function: str | None = None) -> list[np.ndarray]:
    """Runs ``artifact`` (a CompileResult, its directory or manifest) on ``inputs``.

    Returns the outputs as numpy arrays. ``runtime="stock"`` runs the .vmfb
    with IREE's own runtime; ``runtime="npukit"`` runs static and embedded
    artifacts on npukit's runtime (both on this machine).
    """
    return load(artifact, runtime=runtime, function=function)(*inputs)
