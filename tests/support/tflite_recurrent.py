"""Synthetic UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF models for the tests,
built with TFLite's flatbuffer object API (ai-edge-litert's schema), and
the interpreters that give their reference outputs.

A model holds several independent operators (one per case), each with its
own input, output and variable state tensors, so that one compile covers a
sweep of variants. Weights and scales come from each case's seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

_TYPES = {"float32": schema.TensorType.FLOAT32, "int8": schema.TensorType.INT8, "int16": schema.TensorType.INT16,
          "int32": schema.TensorType.INT32, "uint8": schema.TensorType.UINT8}
_NUMPY = {"float32": np.float32, "int8": np.int8, "int16": np.int16, "int32": np.int32}
ACTIVATION_NONE, ACTIVATION_RELU, ACTIVATION_TANH = 0, 1, 4


class ModelWriter:
    """Subgraphs' tensors and operators, written as a .tflite flatbuffer: the
    main subgraph (``subgraph``, 0) and any ``add_subgraph`` adds after it.
    Tensors and operators go to the main subgraph unless one is given."""

    def __init__(self) -> None:
        self.model = schema.ModelT()
        self.model.version = 3
        self.model.buffers = [schema.BufferT()]
        self.model.operatorCodes = []
        self.subgraphs: list[schema.SubGraphT] = []
        self.subgraph = self.add_subgraph()
        self.codes: dict[int, int] = {}

    def add_subgraph(self) -> schema.SubGraphT:
        graph = schema.SubGraphT()
        graph.tensors, graph.operators, graph.inputs, graph.outputs = [], [], [], []
        self.subgraphs.append(graph)
        return graph

    def tensor(self, name: str, dtype, shape, scale: float | None = None, zero_point: int = 0,
               data: np.ndarray | None = None, variable: bool = False, resource: bool = False,
               subgraph: schema.SubGraphT | None = None) -> int:
        """A tensor of ``dtype`` (a name or a numpy type; ``resource``: a resource handle) in ``subgraph``."""
        graph = self.subgraph if subgraph is None else subgraph
        dtype = np.dtype(dtype).name
        t = schema.TensorT()
        t.name, t.shape, t.isVariable = name, [int(d) for d in shape], variable
        t.type = schema.TensorType.RESOURCE if resource else _TYPES[dtype]
        if scale is not None:
            q = schema.QuantizationParametersT()
            q.scale, q.zeroPoint = [float(scale)], [int(zero_point)]
            t.quantization = q
        buffer = schema.BufferT()
        if data is not None:
            array = np.ascontiguousarray(np.asarray(data, dtype).reshape(shape))
            buffer.data = np.frombuffer(array.tobytes(), np.uint8)
        self.model.buffers.append(buffer)
        t.buffer = len(self.model.buffers) - 1
        graph.tensors.append(t)
        return len(graph.tensors) - 1

    def operator(self, builtin: int, inputs: list[int], outputs: list[int], options_type: int, options,
                 intermediates: list[int] | None = None, subgraph: schema.SubGraphT | None = None) -> None:
        if builtin not in self.codes:
            code = schema.OperatorCodeT()
            code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, min(builtin, 127), 1
            self.model.operatorCodes.append(code)
            self.codes[builtin] = len(self.model.operatorCodes) - 1
        op = schema.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = self.codes[builtin], inputs, outputs
        op.builtinOptionsType, op.builtinOptions = options_type, options
        if intermediates:
            op.intermediates = intermediates
        (self.subgraph if subgraph is None else subgraph).operators.append(op)

    def finish(self) -> bytes:
        self.model.subgraphs = self.subgraphs
        builder = flatbuffers.Builder(1024)
        builder.Finish(self.model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


# LSTM --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LstmCase:
    """One LSTM operator. ``n_output`` differs from ``n_cell`` only with a projection."""

    batch: int = 1
    steps: int = 5
    n_input: int = 6
    n_cell: int = 8
    n_output: int | None = None
    cifg: bool = False
    peephole: bool = False
    layer_norm: bool = False
    projection: bool = False
    time_major: bool = False
    cell_scale_log2: int = -11
    cell_clip: float = 0.0
    projection_clip: float = 0.0
    input_zero_point: int = -5
    state_zero_point: int = 3
    hidden_zero_point: int = 0  # with a projection (without one the hidden value is the output state's)
    weight_scale: float = 0.01
    dtype: str = "int8"
    activation: int = ACTIVATION_TANH
    seed: int = 0

    @property
    def outputs(self) -> int:
        return self.n_output if self.projection and self.n_output else self.n_cell

    @property
    def input_shape(self) -> tuple[int, int, int]:
        order = (self.steps, self.batch) if self.time_major else (self.batch, self.steps)
        return order + (self.n_input,)

    def describe(self) -> str:
        flags = [name for name in ("cifg", "peephole", "layer_norm", "projection", "time_major") if getattr(self, name)]
        return f"{self.dtype} lstm b{self.batch} t{self.steps} c{self.n_cell} o{self.outputs} " \
               f"{'+'.join(flags) or 'plain'} seed {self.seed}"


def _add_lstm(w: ModelWriter, case: LstmCase, k: int) -> None:
    rng = np.random.default_rng(case.seed)
    quantized = case.dtype == "int8"
    n_cell, n_out, n_in = case.n_cell, case.outputs, case.n_input
    gates = "fco" if case.cifg else "ifco"
    in_scale = float(rng.uniform(0.01, 0.04))
    state_scale = float(rng.uniform(0.5, 1.5)) / 128
    hidden_scale = float(rng.uniform(0.5, 1.5)) / 128 if case.projection else state_scale
    hidden_zp = case.hidden_zero_point if case.projection else case.state_zero_point
    inputs = [-1] * 24

    def weights(name, shape, scale):
        if quantized:
            return w.tensor(name, "int8", shape, scale, 0, rng.integers(-127, 128, shape))
        return w.tensor(name, "float32", shape, data=rng.normal(0, 0.3, shape))

    inputs[0] = w.tensor(f"lstm{k}_input", case.dtype, case.input_shape, in_scale if quantized else None,
                         case.input_zero_point)
    for j, g in enumerate("ifco"):
        if g not in gates:
            continue
        w_in = case.weight_scale * float(rng.uniform(0.5, 2.0))
        w_rec = case.weight_scale * float(rng.uniform(0.5, 2.0))
        inputs[1 + j] = weights(f"lstm{k}_in_{g}", (n_cell, n_in), w_in)
        inputs[5 + j] = weights(f"lstm{k}_rec_{g}", (n_cell, n_out), w_rec)
        if quantized:
            inputs[12 + j] = w.tensor(f"lstm{k}_bias_{g}", "int32", (n_cell,), w_in * in_scale, 0,
                                      rng.integers(-4000, 4000, n_cell))
        else:
            inputs[12 + j] = w.tensor(f"lstm{k}_bias_{g}", "float32", (n_cell,), data=rng.normal(0, 0.5, n_cell))
        if case.peephole and g != "c":
            position = {"i": 9, "f": 10, "o": 11}[g]
            if quantized:
                inputs[position] = w.tensor(f"lstm{k}_peephole_{g}", "int16", (n_cell,), 3e-5, 0,
                                            rng.integers(-20000, 20000, n_cell))
            else:
                inputs[position] = w.tensor(f"lstm{k}_peephole_{g}", "float32", (n_cell,),
                                            data=rng.normal(0, 0.5, n_cell))
        if case.layer_norm:
            if quantized:
                inputs[20 + j] = w.tensor(f"lstm{k}_norm_{g}", "int16", (n_cell,), 1.3 / 16384, 0,
                                          rng.integers(5000, 30000, n_cell))
            else:
                inputs[20 + j] = w.tensor(f"lstm{k}_norm_{g}", "float32", (n_cell,),
                                          data=rng.uniform(0.5, 1.5, n_cell))
    if case.projection:
        inputs[16] = weights(f"lstm{k}_projection", (n_out, n_cell), 0.01)
        if quantized:
            inputs[17] = w.tensor(f"lstm{k}_projection_bias", "int32", (n_out,), 0.01 * hidden_scale, 0,
                                  rng.integers(-500, 500, n_out))
        else:
            inputs[17] = w.tensor(f"lstm{k}_projection_bias", "float32", (n_out,), data=rng.normal(0, 0.2, n_out))
    inputs[18] = w.tensor(f"lstm{k}_output_state", case.dtype, (case.batch, n_out), state_scale if quantized else None,
                          case.state_zero_point, variable=True)
    cell_dtype = "int16" if quantized else "float32"
    inputs[19] = w.tensor(f"lstm{k}_cell_state", cell_dtype, (case.batch, n_cell),
                          2.0 ** case.cell_scale_log2 if quantized else None, 0, variable=True)
    output_shape = case.input_shape[:2] + (n_out,)
    output = w.tensor(f"lstm{k}_output", case.dtype, output_shape, state_scale if quantized else None,
                      case.state_zero_point)
    intermediates = []
    if quantized:
        for j in range(4):
            if case.layer_norm:
                intermediates.append(w.tensor(f"lstm{k}_gate{j}", "int16", (0,), float(rng.uniform(4e-4, 1.2e-3))))
            else:
                intermediates.append(w.tensor(f"lstm{k}_gate{j}", "float32", (0,)))
        intermediates.append(w.tensor(f"lstm{k}_hidden", "int8", (0,), hidden_scale, hidden_zp))
    options = schema.UnidirectionalSequenceLSTMOptionsT()
    options.fusedActivationFunction = case.activation
    options.cellClip, options.projClip, options.timeMajor = case.cell_clip, case.projection_clip, case.time_major
    w.operator(schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [output],
               schema.BuiltinOptions.UnidirectionalSequenceLSTMOptions, options, intermediates)
    w.subgraph.inputs.append(inputs[0])
    w.subgraph.outputs.append(output)


def lstm_model(cases: list[LstmCase]) -> bytes:
    w = ModelWriter()
    for k, case in enumerate(cases):
        _add_lstm(w, case, k)
    return w.finish()


# SVDF --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SvdfCase:
    """One SVDF operator. ``state_dtype`` int16 is TFLite's integer form,
    int8 TFLite Micro's; float32 is the float form."""

    batch: int = 1
    n_input: int = 24
    filters: int = 16
    memory: int = 5
    rank: int = 2
    state_dtype: str = "int16"
    state_zero_point: int = 0
    input_zero_point: int = -3
    output_zero_point: int = -20
    bias: bool = True
    activation: int = ACTIVATION_RELU
    state_headroom: float = 0.7  # the state's range over the feature outputs' (below 1: saturates)
    seed: int = 0

    @property
    def units(self) -> int:
        return self.filters // self.rank

    def describe(self) -> str:
        return f"{self.state_dtype} svdf b{self.batch} f{self.filters} m{self.memory} r{self.rank} seed {self.seed}"


def _add_svdf(w: ModelWriter, case: SvdfCase, k: int) -> None:
    rng = np.random.default_rng(case.seed)
    shape_state = (case.batch, case.filters * case.memory)
    if case.state_dtype == "float32":
        x = w.tensor(f"svdf{k}_input", "float32", (case.batch, case.n_input))
        wf = w.tensor(f"svdf{k}_feature", "float32", (case.filters, case.n_input),
                      data=rng.normal(0, 0.3, (case.filters, case.n_input)))
        wt = w.tensor(f"svdf{k}_time", "float32", (case.filters, case.memory),
                      data=rng.normal(0, 0.5, (case.filters, case.memory)))
        bias = w.tensor(f"svdf{k}_bias", "float32", (case.units,), data=rng.normal(0, 0.5, case.units)) \
            if case.bias else -1
        state = w.tensor(f"svdf{k}_state", "float32", shape_state, variable=True)
        y = w.tensor(f"svdf{k}_output", "float32", (case.batch, case.units))
    else:
        wide = case.state_dtype == "int16"
        in_scale, wf_scale = float(rng.uniform(0.01, 0.03)), float(rng.uniform(0.002, 0.006))
        wt_scale = float(rng.uniform(0.002, 0.004)) / (64 if wide else 1)
        wf_data = rng.integers(-127, 128, (case.filters, case.n_input))
        wt_data = rng.integers(-127, 128, (case.filters, case.memory)) * (64 if wide else 1)
        # Scales from the float ranges of random inputs (as a converter calibrates them).
        features = (rng.integers(-128, 128, (64, case.n_input)) - case.input_zero_point) * in_scale @ \
            (wf_data * wf_scale).T
        limit = 32767 if wide else 127
        state_scale = float(np.abs(features).max()) / (limit * case.state_headroom)
        outputs = (features[:, :, None] * (wt_data * wt_scale)[None]).sum(2).reshape(64, case.units, case.rank).sum(2)
        out_scale = float(np.abs(outputs).max()) / 100.0 + 1e-9
        x = w.tensor(f"svdf{k}_input", "int8", (case.batch, case.n_input), in_scale, case.input_zero_point)
        wf = w.tensor(f"svdf{k}_feature", "int8", (case.filters, case.n_input), wf_scale, 0, wf_data)
        wt = w.tensor(f"svdf{k}_time", case.state_dtype, (case.filters, case.memory), wt_scale, 0, wt_data)
        bias = w.tensor(f"svdf{k}_bias", "int32", (case.units,), state_scale * wt_scale, 0,
                        rng.integers(-2000, 2000, case.units)) if case.bias else -1
        state = w.tensor(f"svdf{k}_state", case.state_dtype, shape_state, state_scale, case.state_zero_point,
                         variable=True)
        y = w.tensor(f"svdf{k}_output", "int8", (case.batch, case.units), out_scale, case.output_zero_point)
    options = schema.SVDFOptionsT()
    options.rank, options.fusedActivationFunction = case.rank, case.activation
    w.operator(schema.BuiltinOperator.SVDF, [x, wf, wt, bias, state], [y], schema.BuiltinOptions.SVDFOptions, options)
    w.subgraph.inputs.append(x)
    w.subgraph.outputs.append(y)


def svdf_model(cases: list[SvdfCase]) -> bytes:
    w = ModelWriter()
    for k, case in enumerate(cases):
        _add_svdf(w, case, k)
    return w.finish()


# Reference interpreters ------------------------------------------------------------------------------

class ReferenceKernels:
    """TFLite's reference kernels (BUILTIN_REF) on one interpreter, called
    repeatedly: variable tensors carry over between calls."""

    def __init__(self, model: bytes) -> None:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        self.interpreter = Interpreter(model_content=model,
                                       experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        self.interpreter.allocate_tensors()

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        for detail, x in zip(self.interpreter.get_input_details(), inputs):
            self.interpreter.set_tensor(detail["index"], x)
        self.interpreter.invoke()
        return [self.interpreter.get_tensor(d["index"]).copy() for d in self.interpreter.get_output_details()]


class MicroInterpreter:
    """TFLite Micro's interpreter (the tflite-micro package) on a model of
    ``outputs`` outputs, called repeatedly: variable tensors carry over
    between calls."""

    def __init__(self, model: bytes, outputs: int) -> None:
        from tflite_micro.python.tflite_micro import runtime

        self.interpreter = runtime.Interpreter.from_bytes(model)
        self.outputs = outputs

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        for i, x in enumerate(inputs):
            self.interpreter.set_input(x, i)
        self.interpreter.invoke()
        return [np.array(self.interpreter.get_output(i)).copy() for i in range(self.outputs)]


def random_inputs(shapes_and_dtypes, rng: np.random.Generator) -> list[np.ndarray]:
    arrays = []
    for shape, dtype in shapes_and_dtypes:
        if dtype == "float32":
            arrays.append(rng.uniform(-2, 2, shape).astype(np.float32))
        else:
            info = np.iinfo(_NUMPY[dtype])
            arrays.append(rng.integers(info.min, info.max + 1, shape).astype(_NUMPY[dtype]))
    return arrays
