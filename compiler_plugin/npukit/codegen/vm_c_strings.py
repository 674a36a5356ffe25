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
from collections import Counter

_ARRAY = re.compile(r"^iree_alignas\(1\) static const uint8_t (\w+__utf8_\w+)\[\] = \{([0-9, ]*)\};$", re.MULTILINE)
_SIZEOF = re.compile(r"sizeof\((\w+)\)")
_ASSIGNED = re.compile(r"= (\w+);")
_MARK = "__utf8_"


def _literal(data: bytes) -> str | None:
    if not data or any(b < 0x20 or b > 0x7E for b in data):
        return None
    text = data.decode("ascii")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?") + '"'


def _identifier_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def _string_names(body: str) -> Counter:
    """How often each identifier holding ``__utf8_`` occurs in ``body``, from one
    scan for the marker (a module with embedded executables is many MB of
    byte arrays: a regular expression per name would scan them per name)."""
    found: Counter = Counter()
    at = body.find(_MARK)
    while at != -1:
        start, end = at, at + len(_MARK)
        while start > 0 and _identifier_char(body[start - 1]):
            start -= 1
        while end < len(body) and _identifier_char(body[end]):
            end += 1
        found[body[start:end]] += 1
        at = body.find(_MARK, end)
    return found


def string_literals(body: str) -> tuple[str, int]:
    """``body`` with its printable byte-array strings as literals; the number rewritten."""
    arrays = list(_ARRAY.finditer(body))
    if not arrays:
        return body, 0
    uses = _string_names(body)
    sized = Counter(name for name in _SIZEOF.findall(body) if _MARK in name)
    assigned = Counter(name for name in _ASSIGNED.findall(body) if _MARK in name)
    chosen: dict[str, tuple[int, str]] = {}  # name -> (its byte count, its literal)
    for m in arrays:
        name = m.group(1)
        data = bytes(int(v) for v in m.group(2).split(",") if v.strip())
        literal = _literal(data)
        # Besides the definition, only "v = NAME;" and "sizeof(NAME)".
        if literal is None or uses[name] != 1 + sized[name] + assigned[name]:
            continue
        chosen[name] = (len(data), literal)
    if not chosen:
        return body, 0
    body = _SIZEOF.sub(lambda m: f"((iree_host_size_t){chosen[m.group(1)][0]})" if m.group(1) in chosen
                       else m.group(0), body)
    body = _ARRAY.sub(lambda m: f"#define {m.group(1)} ((const uint8_t*){chosen[m.group(1)][1]})"
                      if m.group(1) in chosen else m.group(0), body)
    return body, len(chosen)
