"""Generate ndk/NeuralNetworks.h, the stand-in NDK header the exported C is compiled against on a machine
without the NDK: its constants from nnapi/codes.py (ndk_constants(), the NDK's published values, recorded
once there), the rest (types and function declarations) from templates/NeuralNetworks.h.in.

    python -m converters.export.ndk_header          # rewrite ndk/NeuralNetworks.h
    python -m converters.export.ndk_header --check  # exit 1 when the committed header differs
"""
from __future__ import annotations

import sys

from nnapi.codes import ndk_constants

from . import NDK_DIR
from .generator import render

HEADER = NDK_DIR / "NeuralNetworks.h"

# what each of the NDK's enums holds, for the comment above it
ENUM_TITLES = {
    "OperandCode": "Operand types",
    "OperationCode": "Operation types",
    "FuseCode": "Fused activation functions",
    "PaddingCode": "Implicit padding schemes",
    "PreferenceCode": "Execution preferences",
    "PriorityCode": "Execution priorities (API 30)",
    "DeviceTypeCode": "Device types (API 29)",
    "ResultCode": "Result codes",
    "FeatureLevelCode": "Feature levels: Android API levels 27-31, then the feature levels of the updatable "
                        "NNAPI module",
    "": "Operand values of at most this many bytes are copied by setOperandValue",
}


def enums_text() -> str:
    blocks = []
    for ndk_enum, members in ndk_constants():
        title = f"/* {ndk_enum + ': ' if ndk_enum else ''}{ENUM_TITLES[ndk_enum]}. */"
        body = ",\n".join(f"    {name} = {value}" for name, value in members)
        blocks.append(f"{title}\nenum {{\n{body}\n}};\n")
    return "\n".join(blocks)


def header_text() -> str:
    return render("NeuralNetworks.h.in", enums=enums_text())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = header_text()
    if "--check" in argv:
        same = HEADER.read_text() == text
        print(f"{HEADER}: {'up to date' if same else 'differs from the generated header'}")
        return 0 if same else 1
    HEADER.write_text(text)
    print(f"wrote {HEADER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
