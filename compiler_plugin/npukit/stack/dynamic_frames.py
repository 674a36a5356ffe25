"""The run-time parts of frames that npukit's own C sizes from its data, and
their bounds: what the stack analysis adds for a function that lowers the
stack pointer by a computed amount.

npukit_s8_conv (cpu/kernels/s8_conv.c) puts the convolution's im2col
columns and one input row on the stack: int16_t[2 * k] (8-byte aligned) and
int8_t[k] (4-byte aligned) with k = min(K_PADDED, NPUKIT_S8_K_CHUNK), so
5 * k bytes and at most 32 of alignment (each array rounded up to the
stack's 16-byte alignment at most). A model's manifest gives each layer's
K_PADDED (``cpu_kernels``); without it the chunk bounds it.

npukit_s8_fully_connected (cpu/kernels/s8_fully_connected.c) puts the
input of a batch-1 fully connected layer on the stack as int16, a chunk of
the reduction at a time when it is longer than NPUKIT_S8_K_CHUNK: int32_t[k /
2] (8-byte aligned) with the same k, 2 * k bytes and the same alignment slack.
"""

from __future__ import annotations

from npukit.cpu.layer_kernels import K_CHUNK

CONV_KERNEL = "npukit_s8_conv"
FULLY_CONNECTED_KERNEL = "npukit_s8_fully_connected"
_ALIGNMENT_SLACK = 32


def conv_columns_bytes(k_padded: int) -> int:
    """The most npukit_s8_conv's arrays take for a reduction of |k_padded|."""
    return 5 * min(k_padded, K_CHUNK) + _ALIGNMENT_SLACK


def fully_connected_input_bytes(k_padded: int) -> int:
    """The most npukit_s8_fully_connected's input array takes for a reduction of |k_padded|."""
    return 2 * min(k_padded, K_CHUNK) + _ALIGNMENT_SLACK


def dynamic_bounds(manifest: dict | None) -> dict[str, int]:
    """Per function with a run-time sized frame, the most that part takes
    for the model of |manifest| (any model when None or when a layer's
    reduction is not recorded)."""
    largest = K_CHUNK
    if manifest is not None:
        layers = [entry for entry in (manifest.get("cpu_kernels") or {}).values() if "operation" in entry]
        if all("k_padded" in entry for entry in layers):
            largest = max([entry["k_padded"] for entry in layers] + [0])
    return {CONV_KERNEL: conv_columns_bytes(largest), FULLY_CONNECTED_KERNEL: fully_connected_input_bytes(largest)}
