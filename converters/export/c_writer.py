"""Formatting of C source text: comments, string literals, exact number literals
and constant arrays, safe for `gcc -std=c11 -Wall -Wextra -Werror`.

Names from source models are arbitrary text, so everything taken from them is
escaped: in comments `*/` and `/*` are broken up and every character outside
printable ASCII is written as an escape (so no comment can end early, nest,
splice lines or form a trigraph line splice); in string literals `\\`, `"` and
`?` (trigraphs are on in ISO C11) are escaped and non-printable bytes written
as three-digit octal escapes.
"""
from __future__ import annotations

import keyword
import math
import re
import struct
from typing import Iterable, Optional

import numpy as np

from nnapi.codes import OperandCode as C
from nnapi.operand import OperandType

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert
_Thread_local bool true false""".split())


def is_identifier(name: str) -> bool:
    """A C identifier that is not a keyword and does not use a reserved spelling (_X..., __...)."""
    return (bool(_IDENT.match(name)) and name not in C_KEYWORDS and not name.startswith("__")
            and not (name.startswith("_") and len(name) > 1 and name[1].isupper()) and not keyword.iskeyword(name))


def comment_text(text: str, limit: int = 120) -> str:
    """`text` made safe inside a /* */ comment on one line (shortened to `limit` characters)."""
    out = []
    for ch in str(text):
        if 0x20 <= ord(ch) < 0x7F:
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    s = "".join(out)
    # break up comment delimiters (also ones formed across an escape boundary)
    while "*/" in s or "/*" in s:
        s = s.replace("*/", "*\\/").replace("/*", "/\\*")
    if len(s) > limit:
        s = s[:limit - 3] + "..."
        while s.endswith("/") or s.endswith("*"):  # never leave half a delimiter before " */"
            s = s[:-1]
    if s.endswith("\\"):
        s += " "
    return s


def comment(text: str) -> str:
    return f"/* {comment_text(text)} */"


def string_literal(text: str) -> str:
    """A C string literal holding the UTF-8 bytes of `text`."""
    out = ['"']
    for b in str(text).encode("utf-8"):
        ch = chr(b)
        if ch in '\\"?':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


def float_literal(x) -> Optional[str]:
    """An exact C `float` literal for the float32 value of x (None for inf/nan)."""
    f = np.float32(x)
    if not math.isfinite(float(f)):
        return None
    s = f"{float(f):.9g}"
    if not any(c in s for c in ".e"):
        s += ".0"
    elif "e" in s and "." not in s.split("e")[0]:
        mant, exp = s.split("e")
        s = f"{mant}.0e{exp}"
    if np.float32(float(s)).tobytes() != f.tobytes():  # cannot happen with 9 digits; be safe anyway
        return None
    return s + "f"


def _half_literal(bits: int) -> str:
    v = np.frombuffer(struct.pack("<H", bits), np.float16)[0]
    return f"0x{bits:04x} {comment(repr(float(v)) if math.isfinite(float(v)) else str(v))}"


# C element type and per-element formatting of constant data by operand type
def c_array(otype: OperandType, raw: bytes) -> tuple[str, list[str]]:
    """(C element type, element literals) for the bytes of a constant of type `otype`.

    Integers are written as integers, float32 as exact float literals, float16
    as their bit patterns (C11 has no half type) with the value in a comment,
    booleans as 0/1; anything not representable this way (a non-finite float)
    falls back to raw bytes."""
    code = otype.code
    if code in (C.FLOAT32, C.TENSOR_FLOAT32):
        vals = np.frombuffer(raw, "<f4")
        lits = [float_literal(v) for v in vals]
        if all(lits):
            return "float", lits
    elif code in (C.FLOAT16, C.TENSOR_FLOAT16):
        return "uint16_t", [_half_literal(int(b)) for b in np.frombuffer(raw, "<u2")]
    elif code in (C.INT32, C.TENSOR_INT32):
        return "int32_t", [_int32_literal(int(v)) for v in np.frombuffer(raw, "<i4")]
    elif code == C.UINT32:
        return "uint32_t", [f"{int(v)}u" for v in np.frombuffer(raw, "<u4")]
    elif code in (C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT8_SYMM_PER_CHANNEL):
        return "int8_t", [str(int(v)) for v in np.frombuffer(raw, "i1")]
    elif code == C.TENSOR_QUANT16_SYMM:
        return "int16_t", [str(int(v)) for v in np.frombuffer(raw, "<i2")]
    elif code == C.TENSOR_QUANT16_ASYMM:
        return "uint16_t", [str(int(v)) for v in np.frombuffer(raw, "<u2")]
    return "uint8_t", [str(b) for b in raw]


def _int32_literal(v: int) -> str:
    return "(-2147483647 - 1)" if v == -2**31 else str(v)


def wrap_items(items: Iterable[str], indent: str, width: int = 100) -> list[str]:
    """Comma-separated items in lines of at most `width` characters (a trailing comma on each)."""
    lines, cur = [], ""
    for it in items:
        piece = it + ","
        if cur and len(indent) + len(cur) + 1 + len(piece) > width:
            lines.append(indent + cur)
            cur = piece
        else:
            cur = f"{cur} {piece}" if cur else piece
    if cur:
        lines.append(indent + cur)
    return lines


def u32_list(values: Iterable[int], names: Optional[Iterable[Optional[str]]] = None) -> str:
    """`{1, 8, 8, 3}`, or with argument names: `{/* input */ 0, /* filter */ 1}`."""
    values = list(values)
    if names is None:
        return "{" + ", ".join(str(int(v)) for v in values) + "}"
    return "{" + ", ".join(f"{comment(n)} {int(v)}" if n else str(int(v))
                           for v, n in zip(values, names)) + "}"
