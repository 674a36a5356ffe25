"""Models with TFLite resource variables (VAR_HANDLE, READ_VARIABLE,
ASSIGN_VARIABLE, CALL_ONCE and its initialisation subgraph), written with the
flatbuffer object API as streaming models keep their state: a window of
the last frames read, extended with the new frames, the newest ones kept.

``Program`` collects the main subgraph's operators and, through ``init``,
the constants the initialisation subgraph assigns; ``build()`` gives the
model's bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from support.tflite_recurrent import ModelWriter


@dataclass
class _Subgraph:
    graph: schema.SubGraphT


class Program:
    """A model under construction: the main subgraph (0) and, once ``init`` is called, an initialisation one,
    written through ``ModelWriter``."""

    def __init__(self) -> None:
        self.writer = ModelWriter()
        self.model = self.writer.model
        self.main = _Subgraph(self.writer.subgraph)
        self.initialiser: _Subgraph | None = None

    # Tensors and operators -----------------------------------------------------

    def tensor(self, sub: _Subgraph, shape, dtype, name: str, data: np.ndarray | None = None,
               scale: float | None = None, zero_point: int = 0, resource: bool = False) -> int:
        return self.writer.tensor(name, dtype, shape, scale, zero_point, data,
                                  resource=resource, subgraph=sub.graph)

    def operator(self, sub: _Subgraph, name: str, inputs: list[int], outputs: list[int],
                 options: tuple[str, object] | None = None) -> None:
        options_type, table = (getattr(schema.BuiltinOptions, options[0]), options[1]) if options else (0, None)
        self.writer.operator(getattr(schema.BuiltinOperator, name), list(inputs), list(outputs), options_type, table,
                             subgraph=sub.graph)

    def handle(self, sub: _Subgraph, shared_name: str, container: str = "") -> int:
        """A VAR_HANDLE of the variable ``(container, shared_name)`` in ``sub``; its handle tensor."""
        out = self.tensor(sub, [], np.int32, f"handle_{shared_name}", resource=True)
        options = schema.VarHandleOptionsT()
        options.container, options.sharedName = container, shared_name
        self.operator(sub, "VAR_HANDLE", [], [out], ("VarHandleOptions", options))
        return out

    # What a test writes -----------------------------------------------------------

    def init(self, shared_name: str, value: np.ndarray, container: str = "") -> None:
        """The initialisation subgraph assigns the constant ``value`` to the variable (the subgraph and the
        main subgraph's CALL_ONCE are made on first use)."""
        if self.initialiser is None:
            self.initialiser = _Subgraph(self.writer.add_subgraph())
            options = schema.CallOnceOptionsT()
            options.initSubgraphIndex = 1
            self.operator(self.main, "CALL_ONCE", [], [], ("CallOnceOptions", options))
        sub = self.initialiser
        h = self.handle(sub, shared_name, container)
        c = self.tensor(sub, value.shape, value.dtype, f"initial_{shared_name}", data=value)
        self.operator(sub, "ASSIGN_VARIABLE", [h, c], [])

    def input(self, shape, dtype, name: str, scale: float | None = None, zero_point: int = 0) -> int:
        index = self.tensor(self.main, shape, dtype, name, scale=scale, zero_point=zero_point)
        self.main.graph.inputs.append(index)
        return index

    def output(self, index: int) -> None:
        self.main.graph.outputs.append(index)

    def read(self, shared_name: str, shape, dtype, container: str = "", scale: float | None = None,
             zero_point: int = 0) -> int:
        h = self.handle(self.main, shared_name, container)
        out = self.tensor(self.main, shape, dtype, f"read_{shared_name}_{len(self.main.graph.tensors)}",
                          scale=scale, zero_point=zero_point)
        self.operator(self.main, "READ_VARIABLE", [h], [out])
        return out

    def assign(self, shared_name: str, value: int, container: str = "") -> None:
        h = self.handle(self.main, shared_name, container)
        self.operator(self.main, "ASSIGN_VARIABLE", [h, value], [])

    def concatenate(self, a: int, b: int, axis: int, shape, dtype, scale=None, zero_point: int = 0) -> int:
        out = self.tensor(self.main, shape, dtype, f"concat_{len(self.main.graph.tensors)}", scale=scale,
                          zero_point=zero_point)
        options = schema.ConcatenationOptionsT()
        options.axis = axis
        self.operator(self.main, "CONCATENATION", [a, b], [out], ("ConcatenationOptions", options))
        return out

    def keep_last(self, x: int, shape, axis: int, count: int, dtype, scale=None, zero_point: int = 0) -> int:
        """STRIDED_SLICE of the last ``count`` entries of ``x`` (of ``shape``) along ``axis``."""
        begin = np.zeros(len(shape), np.int32)
        begin[axis] = shape[axis] - count
        end = np.asarray(shape, np.int32)
        strides = np.ones(len(shape), np.int32)
        inputs = [x] + [self.tensor(self.main, [len(shape)], np.int32, f"slice_{n}_{len(self.main.graph.tensors)}",
                                    data=v) for n, v in (("begin", begin), ("end", end), ("strides", strides))]
        kept = list(shape)
        kept[axis] = count
        out = self.tensor(self.main, kept, dtype, f"kept_{len(self.main.graph.tensors)}", scale=scale,
                          zero_point=zero_point)
        self.operator(self.main, "STRIDED_SLICE", inputs, [out], ("StridedSliceOptions", schema.StridedSliceOptionsT()))
        return out

    def add(self, a: int, b: int, shape, dtype, scale=None, zero_point: int = 0) -> int:
        out = self.tensor(self.main, shape, dtype, f"sum_{len(self.main.graph.tensors)}", scale=scale,
                          zero_point=zero_point)
        self.operator(self.main, "ADD", [a, b], [out], ("AddOptions", schema.AddOptionsT()))
        return out

    def conv(self, x: int, weights: np.ndarray, bias: np.ndarray, shape, input_scale: float, weight_scale: float,
             scale: float, zero_point: int = 0) -> int:
        """An int8 CONV_2D of ``x`` (VALID padding, stride 1, fused RELU) with per-tensor ``weights`` (OHWI) and
        int32 ``bias``, giving ``shape``."""
        w = self.tensor(self.main, weights.shape, np.int8, f"weights_{len(self.main.graph.tensors)}", data=weights,
                        scale=weight_scale)
        b = self.tensor(self.main, bias.shape, np.int32, f"bias_{len(self.main.graph.tensors)}", data=bias,
                        scale=input_scale * weight_scale)
        out = self.tensor(self.main, shape, np.int8, f"conv_{len(self.main.graph.tensors)}", scale=scale,
                          zero_point=zero_point)
        options = schema.Conv2DOptionsT()
        options.padding, options.strideW, options.strideH = schema.Padding.VALID, 1, 1
        options.dilationWFactor, options.dilationHFactor = 1, 1
        options.fusedActivationFunction = schema.ActivationFunctionType.RELU
        self.operator(self.main, "CONV_2D", [x, w, b], [out], ("Conv2DOptions", options))
        return out

    def build(self) -> bytes:
        return self.writer.finish()


def with_states_as_outputs(model: bytes) -> bytes:
    """``model`` with every value its main subgraph's ASSIGN_VARIABLEs assign added to its outputs (after its
    own), so a test compares each call's new states as well as the model's outputs."""
    m = schema.ModelT.InitFromPackedBuf(model, 0)
    graph = m.subgraphs[0]
    assign = schema.BuiltinOperator.ASSIGN_VARIABLE
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in m.operatorCodes]
    assigned = [op.inputs[1] for op in graph.operators if codes[op.opcodeIndex] == assign]
    graph.outputs = list(graph.outputs) + [i for i in assigned if i not in list(graph.outputs)]
    builder = flatbuffers.Builder(1024)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
