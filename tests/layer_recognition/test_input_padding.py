"""A convolution's input padding inside its dispatch (IREE's
--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops): the
recogniser reads the amounts per side and the value into the LayerSpec, and
refuses, with the reason, a padding its consumers cannot take."""

from __future__ import annotations

import iree.compiler as ireec
import pytest
from iree.compiler import ir

from npukit.layer_recognition.constant_pool import binding_sites
from npukit.layer_recognition.dispatch_ir import read_dispatch
from npukit.layer_recognition.layer_match import match_layer_at_site
from npukit.layer_recognition.layer_spec import NotSupported
from npukit.passes.fused_padding import FUSE_PADDING_FLAG, padded_dispatches

_CONV = """
func.func @main(%x: tensor<1x6x7x4xi8>{extra_args}) -> tensor<1x{oh}x{ow}x{oc}xi32> {{
  %w = arith.constant dense<3> : {filter}
  %pv = arith.constant {value} : i8
  %padded = tensor.pad %x low[0, {top}, {left}, {c_low}] high[0, {bottom}, {right}, 0] {{
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield {yielded} : i8
  }} : tensor<1x6x7x4xi8> to tensor<1x{ph}x{pw}x{pc}xi8>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x{oh}x{ow}x{oc}xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<1x{oh}x{ow}x{oc}xi32>) -> tensor<1x{oh}x{ow}x{oc}xi32>
  %r = linalg.{op} {{dilations = dense<{dilation}> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
       ins(%padded, %w : tensor<1x{ph}x{pw}x{pc}xi8>, {filter}) outs(%f : tensor<1x{oh}x{ow}x{oc}xi32>)
       -> tensor<1x{oh}x{ow}x{oc}xi32>
  return %r : tensor<1x{oh}x{ow}x{oc}xi32>
}}
"""


def _module_text(padding=(1, 1, 2, 1), value=-7, depthwise=False, stride=1, dilation=1, channel_pad=0,
                 value_argument=False) -> str:
    top, bottom, left, right = padding
    ph, pw, pc = 6 + top + bottom, 7 + left + right, 4 + channel_pad
    oh, ow = ((ph - dilation * 2 - 1) // stride + 1), ((pw - dilation * 2 - 1) // stride + 1)
    oc = pc if depthwise else 5
    return _CONV.format(
        top=top, bottom=bottom, left=left, right=right, ph=ph, pw=pw, pc=pc, oh=oh, ow=ow, oc=oc, value=value,
        c_low=channel_pad, stride=stride, dilation=dilation,
        op="depthwise_conv_2d_nhwc_hwc" if depthwise else "conv_2d_nhwc_hwcf",
        filter=f"tensor<3x3x{pc}xi8>" if depthwise else f"tensor<3x3x{pc}x5xi8>",
        extra_args=", %v: i8" if value_argument else "", yielded="%v" if value_argument else "%pv")


def _recognised(text: str) -> list:
    """(name, LayerSpec or the refusal) of each executable of the module at 'stream'."""
    stream = ireec.compile_str(text, target_backends=["llvm-cpu"],
                               extra_args=["--iree-llvmcpu-target-cpu=host", "--compile-to=stream", FUSE_PADDING_FLAG])
    found = []
    with ir.Context():
        module = ir.Module.parse(stream.decode())
        sites = binding_sites(module.operation)
        assert padded_dispatches(module.operation), "IREE did not fuse the pad into the convolution's dispatch"
        for op in module.body.operations:
            op = op.operation
            if op.name != "stream.executable":
                continue
            body = read_dispatch(op)
            try:
                found.append((body.name, match_layer_at_site(body, sites.get(body.name))))
            except NotSupported as e:
                found.append((body.name, e))
    return found


@pytest.mark.parametrize("padding,depthwise,stride,dilation", [
    ((1, 1, 2, 1), False, 1, 1),
    ((0, 1, 0, 1), False, 2, 1),  # TFLite's SAME with stride 2 on even sizes: bottom and right only
    ((3, 0, 0, 2), True, 1, 1),
    ((2, 2, 2, 2), True, 1, 2),
])
def test_padding_read_into_the_layer(padding, depthwise, stride, dilation):
    [(name, spec)] = _recognised(_module_text(padding, -7, depthwise, stride, dilation))
    assert not isinstance(spec, Exception), spec
    assert spec.kind == ("depthwise" if depthwise else "conv")
    assert spec.padding == padding and spec.pad_value == -7 and spec.padded
    assert spec.ifm_chw == (4, 6, 7)  # the unpadded input, read from memory
    ph, pw = 6 + padding[0] + padding[1], 7 + padding[2] + padding[3]
    assert spec.ofm_chw[1:] == ((ph - 2 * dilation - 1) // stride + 1, (pw - 2 * dilation - 1) // stride + 1)
    assert spec.stride == (stride, stride) and spec.dilation == (dilation, dilation)


def test_padding_along_channels_is_refused():
    [(name, refused)] = _recognised(_module_text(channel_pad=2))
    assert isinstance(refused, NotSupported) and "padded along its channels" in str(refused)


def test_padding_value_known_only_at_run_time_is_refused():
    [(name, refused)] = _recognised(_module_text(value_argument=True))
    assert isinstance(refused, NotSupported) and "not a constant" in str(refused)
