"""The vm-c module's strings as mergeable string literals.

IREE's vm-c output keeps each string the program holds (the export names it
looks up in its executables, format names, input names) as a byte array,

    iree_alignas(1) static const uint8_t m__utf8_main_dispatch_0_conv_AB12[] = {109, 97, ...};

used as ``m__utf8_...`` (the bytes) and ``sizeof(m__utf8_...)`` (their count).
The export names are also in the executables' libraries, as C strings. A byte
array is the module's own copy; a string literal goes to the compiler's
mergeable string section, and the linker keeps one copy of equal strings
across the firmware's objects. ``string_literals`` rewrites each such array
whose bytes are printable ASCII into a macro for the literal and its uses of
``sizeof`` into the count, when those are its only uses; the program reads
the same bytes. kws_int8 on mps2-an386: the module's 10 export names (about
40 B each before they were shortened to d0, d1, ...: passes/short_export_names.py)
are the library's.
"""

from __future__ import annotations

import re

_ARRAY = re.compile(r"^iree_alignas\(1\) static const uint8_t (\w+__utf8_\w+)\[\] = \{([0-9, ]*)\};$", re.MULTILINE)


def _literal(data: bytes) -> str | None:
    if not data or any(b < 0x20 or b > 0x7E for b in data):
        return None
    text = data.decode("ascii")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?") + '"'


def string_literals(body: str) -> tuple[str, int]:
    """``body`` with its printable byte-array strings as literals; the number rewritten."""
    rewritten = 0
    for m in list(_ARRAY.finditer(body)):
        name = m.group(1)
        data = bytes(int(v) for v in m.group(2).split(",") if v.strip())
        literal = _literal(data)
        if literal is None:
            continue
        # Besides the definition, only "v = NAME;" and "sizeof(NAME)".
        sized = body.count(f"sizeof({name})")
        assigned = body.count(f"= {name};")
        if len(re.findall(rf"\b{name}\b", body)) != 1 + sized + assigned:
            continue
        body = body.replace(f"sizeof({name})", f"((iree_host_size_t){len(data)})")
        body = body.replace(m.group(0), f"#define {name} ((const uint8_t*){literal})")
        rewritten += 1
    return body, rewritten
