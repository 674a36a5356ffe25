"""The mynpu-v1 container: what the writer produces loads, and the device's
load-time validation rejects malformed executables naming what is wrong."""

from __future__ import annotations

import struct

import pytest

import numpy as np

from npukit.mynpu.executable import EXPORT_BYTES, HEADER_BYTES, MAGIC, Executable, Export, name_hash
from npukit.mynpu.isa import CONSTANTS_BINDING, PARALLELISM_CODES, CommandStream, HardwareConfig, Op
from npukit.mynpu.simulator import StreamError, run_stream, validate_executable
from support.mynpu_streams import every_instruction_executable, pack_header_size, relu_stream


def relu_executable(**changes) -> bytes:
    fields = dict(config=HardwareConfig(), exports=[Export("relu", relu_stream(), (64, 64))], constants=b"")
    fields.update(changes)
    return Executable(**fields).to_bytes()


def patch(data: bytes, offset: int, fmt: str, *values) -> bytes:
    return data[:offset] + struct.pack(fmt, *values) + data[offset + struct.calcsize(fmt):]


def test_written_executables_validate():
    validate_executable(relu_executable())
    validate_executable(every_instruction_executable())
    two = relu_executable(exports=[Export("a", relu_stream(), (64, 64)), Export("b", relu_stream(32), (32, 32))],
                          constants=bytes(range(7)))
    validate_executable(two)


GOOD = relu_executable()
HOSTED = relu_executable(host_format="embedded-elf-x86_64", host_code=b"\x7fELF" + bytes(60))
EXPORT0 = HEADER_BYTES


@pytest.mark.parametrize("data,message", [
    (GOOD[:63], "shorter than its 64-byte header"),
    (b"MNPX" + GOOD[4:], "bad magic"),
    (patch(GOOD, 4, "<H", 2), "version 2.2; this runtime reads versions 1.0 to 1.2"),
    (patch(GOOD, 6, "<H", 3), "version 1.3; this runtime reads versions 1.0 to 1.2"),
    (patch(GOOD, 8, "<I", len(GOOD) + 1), "truncated"),
    (patch(GOOD, 8, "<I", 40), "smaller than the header"),
    (patch(GOOD, 12, "<I", 0), "pes out of 1..4096"),
    (patch(GOOD, 16, "<I", 512), "sram_bytes out of"),
    (patch(GOOD, 36, "<I", 0), "no exports and no host code"),
    (patch(GOOD, 36, "<I", 1000), "export table lies outside"),
    (patch(GOOD, 40, "<I", len(GOOD) + 4), "constants lie outside"),
    (patch(GOOD, 52, "<I", 5), "format name lies outside the file or does not match"),
    (patch(HOSTED, 60, "<I", 0), "format name lies outside the file or does not match"),
    (patch(HOSTED, 60, "<I", 4096), "host code lies outside the file"),
    (patch(HOSTED, 52, "<I", 65), "format name lies outside"),
    (patch(GOOD, EXPORT0, "<I", len(GOOD)), "export 0: its name lies outside"),
    (patch(GOOD, EXPORT0 + 12, "<I", 10), "export 0: its stream is not"),
    (patch(GOOD, EXPORT0 + 12, "<I", 12), "command 1: a long command is cut off"),
    (patch(GOOD, EXPORT0 + 12, "<I", 8 * 1000), "export 0: its stream lies outside"),
    (patch(GOOD, EXPORT0 + 6, "<B", 9), "export 0: it has more than 8 bindings"),
    (patch(GOOD, EXPORT0 + 7, "<B", 1), "export 0: its reserved bytes"),
    (patch(GOOD, EXPORT0 + 4, "<H", 0), "export 0: it has no name, and no host code"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_malformed_containers_are_rejected(data, message):
    with pytest.raises(StreamError, match=message):
        validate_executable(data)


def _stream_offset(data: bytes) -> int:
    return struct.unpack_from("<I", data, EXPORT0 + 8)[0]


@pytest.mark.parametrize("command,edit,message", [
    (1, (0x7E, 0), "command 1: unknown opcode"),
    (0, (0x01, 200), "command 0: register index out of range"),
    (5, (0x20, 0), "overlapping DMA"),
], ids=["unknown-opcode", "register-index", "overlapping-dma"])
def test_bad_commands_are_rejected_naming_export_and_command(command, edit, message):
    stream = bytearray(relu_stream())
    if edit[0] == 0x20:  # a second DMA read into the same SRAM, in place of a SET
        stream[8 * command:8 * command + 8] = struct.pack("<BBHI", 0x20, 0, 0, 0)
    else:
        stream[8 * command:8 * command + 2] = bytes(edit)
    data = relu_executable(exports=[Export("relu", bytes(stream), (64, 64))])
    with pytest.raises(StreamError, match=f"{message}.*export 0 \\('relu'\\)"):
        validate_executable(data)


def test_dma_beyond_a_declared_binding_is_rejected():
    with pytest.raises(StreamError, match="DMA outside its binding.*'relu'"):
        validate_executable(relu_executable(exports=[Export("relu", relu_stream(), (64, 63))]))


def _table_export(table_at: int, ofm: int) -> Export:
    """Reads 64 elements of binding 0 and the table from the constants (where it fits the SRAM), looks
    them up into ``ofm``."""
    s = CommandStream()
    if table_at + 256 <= HardwareConfig().sram_bytes:
        s.dma(False, CONSTANTS_BINDING, 0, table_at, 256)
    s.dma(False, 0, 0, 512, 64)
    s.set(TABLE_ADDR=table_at, IFM_ADDR=512, IFM_H=1, IFM_W=64, IFM_C=1, OFM_ADDR=ofm, OFM_H=1, OFM_W=64, OFM_C=1)
    return Export("table", s.op(Op.TABLE).dma(True, 1, 0, ofm, 64).end().encode(), (64, 64))


@pytest.mark.parametrize("table_at,ofm,message", [
    (0, 1024, None), (0, 512, None),  # apart, and in place
    (0, 200, "the OFM overlaps the table"), (0, 540, r"the OFM overlaps the IFM \(not in place\)"),
    (256 * 1024 - 200, 1024, "the table outside the SRAM")])
def test_table_instructions_are_validated_at_load(table_at, ofm, message):
    data = relu_executable(exports=[_table_export(table_at, ofm)], constants=bytes(range(256)))
    if message is None:
        validate_executable(data)
        return
    with pytest.raises(StreamError, match=f"{message}.*'table'"):
        validate_executable(data)
    with pytest.raises(StreamError, match="not in this hardware configuration"):
        validate_executable(relu_executable(config=HardwareConfig().without(Op.TABLE),
                                            exports=[_table_export(0, 1024)], constants=bytes(range(256))))


def test_missing_instruction_in_the_configuration_is_rejected():
    with pytest.raises(StreamError, match="not in this hardware configuration"):
        validate_executable(relu_executable(config=HardwareConfig().without(Op.ACT_RELU)))


def test_every_truncation_is_rejected():
    data = every_instruction_executable()
    for n in range(len(data)):
        with pytest.raises(StreamError):
            validate_executable(data[:n])
        if n >= 12:  # the header agreeing with the shorter data must not help
            with pytest.raises(StreamError):
                validate_executable(pack_header_size(data[:n]))


def _entry(data: bytes) -> tuple[int, int, int, int]:
    """Export 0's (name offset or hash, name length, binding count, reserved byte)."""
    return struct.unpack_from("<IHBB", data, EXPORT0)


def test_names_become_hashes_only_with_host_code_and_without_collisions():
    """An export whose name the host code has too keeps only its FNV-1a hash
    (the host's string is the name); without host code, when the host code
    does not have the export (a static library leaves the NPU's exports out),
    or when two of the executable's names share a hash, names stay."""
    hosted = dict(host_format="embedded-elf-x86_64", host_code=b"\x7fELF" + bytes(60), hashed_names=True)
    data = relu_executable(**hosted, host_names=("relu", "other"))
    name_ref, name_length, bindings, reserved = _entry(data)
    assert name_length == 0 and name_ref == name_hash("relu") and bindings == 2 and reserved == 0
    assert b"relu" not in data and b"relu" in relu_executable(**{**hosted, "hashed_names": False})
    validate_executable(data)
    assert _entry(relu_executable(hashed_names=True))[1] == len("relu")
    # Two names of one FNV-1a hash: the names stay.
    a, b = "l9On", "H8aa"
    assert name_hash(a) == name_hash(b)
    kept = relu_executable(**hosted, exports=[Export(a, relu_stream(), (64, 64))], host_names=(a, b))
    assert _entry(kept)[1] == 4
    # Host code without the export: its name is stored.
    static = relu_executable(host_format="static", host_code=b"m_linked\0", hashed_names=True, host_names=("other",))
    name_at, name_length, _, reserved = _entry(static)
    assert static[name_at:name_at + name_length] == b"relu" and reserved == 0
    validate_executable(static)
    # A name hash without host code to look it up in is refused.
    with pytest.raises(StreamError, match="no name, and no host code"):
        validate_executable(patch(GOOD, EXPORT0 + 4, "<H", 0))


def test_name_hash_is_fnv1a():
    assert name_hash("") == 0x811C9DC5 and name_hash("a") == 0xE40C292C


def test_strings_are_packed_and_host_code_aligned_by_what_it_is():
    """Stored names and the host format follow the 4-byte aligned parts
    without padding; an embedded ELF sits 64-byte aligned (loaded in place),
    a static library's name 8-byte aligned (the least the format allows)."""
    two = [Export("d1", relu_stream(), (64, 64)), Export("d23", relu_stream(), (64, 64))]
    for host_format, host_code, alignment in (("static", b"m_linked\0", 8),
                                              ("embedded-elf-x86_64", b"\x7fELF" + bytes(60), 64)):
        data = relu_executable(exports=two, host_format=host_format, host_code=host_code)
        validate_executable(data)
        (first_at, first_length), (second_at, _) = (struct.unpack_from("<IH", data, EXPORT0 + EXPORT_BYTES * i)
                                                    for i in (0, 1))
        assert data[first_at:first_at + 2] == b"d1" and second_at == first_at + first_length
        format_at, format_length, host_at, host_length = struct.unpack_from("<4I", data, 48)
        assert format_at == second_at + 3 and data[format_at:format_at + format_length] == host_format.encode()
        assert host_at % alignment == 0 and host_at - (format_at + format_length) < alignment
        assert data[host_at:host_at + host_length] == host_code


def _version_1_1(name: bytes, stream: bytes, binding_sizes: tuple[int, ...]) -> bytes:
    """A version 1.1 container of one export: 32-byte export entries, the
    binding table and the name where their offsets say."""
    c = HardwareConfig()
    stream_at = HEADER_BYTES + 32
    sizes_at = stream_at + len(stream)
    name_at = sizes_at + 4 * len(binding_sizes)
    total = name_at + len(name)
    header = MAGIC + struct.pack("<HHI6I3I4I", 1, 1, total, c.pes, c.sram_bytes, PARALLELISM_CODES[c.parallelism],
                                 c.dma_bytes_per_cycle, c.clock_mhz, c.instruction_mask, 1, sizes_at, 0, 0, 0, 0, 0)
    entry = struct.pack("<8I", name_at, len(name), stream_at, len(stream), len(binding_sizes), sizes_at, 0, 0)
    return header + entry + stream + struct.pack(f"<{len(binding_sizes)}I", *binding_sizes) + name


def test_version_1_1_executables_still_load():
    stream = CommandStream(short=True)
    stream.set(DMA_BINDING=0, DMA_LENGTH=8, DMA_SRAM_ADDR=0).op(Op.DMA_READ)
    stream.set(IFM_ADDR=0, IFM_H=1, IFM_W=1, IFM_C=8, OFM_ADDR=8, OFM_H=1, OFM_W=1, OFM_C=8, ACT_MIN=-128, ACT_MAX=0)
    stream.op(Op.ACT_RELU).set(DMA_BINDING=1, DMA_SRAM_ADDR=8).op(Op.DMA_WRITE)
    validate_executable(_version_1_1(b"relu", stream.end().encode(), (8, 8)))
    with pytest.raises(StreamError, match="export 0: its reserved bytes"):
        validate_executable(patch(_version_1_1(b"relu", stream.encode(), (8, 8)), HEADER_BYTES + 28, "<I", 1))


def test_registers_start_at_the_version_defaults():
    """A stream that leaves KERNEL_*, STRIDE_*, DILATION_* and the activation
    range at version 1.2's reset values computes with them there; the same
    commands under version 1.1's all-zero reset are a different program (a
    ReLU clamped to [0, 0]), so a 1.1 stream has to write them."""
    s = CommandStream().set(DMA_BINDING=0, DMA_LENGTH=8, DMA_SRAM_ADDR=0).op(Op.DMA_READ)
    s.set(IFM_ADDR=0, IFM_H=1, IFM_W=1, IFM_C=8, OFM_ADDR=8, OFM_H=1, OFM_W=1, OFM_C=8, IFM_ZP=-3, ACT_MIN=-128,
          ACT_MAX=127).op(Op.ACT_RELU)
    commands = s.set(DMA_BINDING=1, DMA_SRAM_ADDR=8).op(Op.DMA_WRITE).end().encode()
    x = np.array([-128, -4, -3, 0, 5, 100, 126, 127], np.int8)
    for defaults, want in ((True, np.maximum(x, -3)), (False, np.zeros(8, np.int8))):
        out = np.zeros(8, np.int8)
        run_stream(HardwareConfig(), commands, [x.copy(), out], register_defaults=defaults)
        assert np.array_equal(out, want), (defaults, out)
