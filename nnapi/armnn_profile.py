"""Build the `armnn` device profile from Arm NN's NnapiSupport.txt (ARM-software/android-nn-driver):

    python -m nnapi.armnn_profile NnapiSupport.txt --revision COMMIT -o nnapi/device_profiles/armnn.json

Each line `OPERATION   (TYPE, TYPE, ...)` of the supported-operations table becomes an entry;
"(All data types)" becomes "all"; "X (output only)" / "Y and Z (input only)" split into output and
input types. The Arm NN driver implements the HAL 1.0-1.3 interfaces, so its feature level is 4."""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys

from .codes import OperandCode, OperationCode

_LINE = re.compile(r"^([A-Z][A-Z0-9_]+)\s+\((.*)\)\s*$")
_HAL = re.compile(r"android\.hardware\.neuralnetworks@1\.(\d)")
_HAL_FEATURE_LEVEL = {0: 1, 1: 2, 2: 3, 3: 4}


def _codes(words: str) -> list:
    names = [w.strip() for w in re.split(r",|\band\b", words) if w.strip()]
    out = []
    for n in names:
        code = "TENSOR_" + n
        if code not in OperandCode.__members__:
            raise ValueError(f"unknown Arm NN tensor type {n!r}")
        out.append(code)
    return out


def parse_nnapi_support(text: str) -> tuple:
    """(operations, feature_level) from the text of NnapiSupport.txt."""
    ops = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m or m.group(1) not in OperationCode.__members__:
            continue
        name, types = m.group(1), m.group(2)
        if types.strip().lower() == "all data types":
            ops[name] = {"types": "all"}
            continue
        parts = [p.strip() for p in re.split(r"\),?\s*", types.replace("(output only", "(output only)")
                                             .replace("(input only", "(input only)")) if p.strip()]
        if any("only" in p for p in parts):
            entry = {}
            for p in parts:
                words, _, role = p.partition("(")
                key = "output_types" if role.startswith("output") else "types"
                entry[key] = _codes(words.strip(" ,"))
            ops[name] = entry
        else:
            ops[name] = {"types": _codes(types)}
    hals = [int(h) for h in _HAL.findall(text)]
    if not ops or not hals:
        raise ValueError("no operation table or HAL version found: is this Arm NN's NnapiSupport.txt?")
    return ops, _HAL_FEATURE_LEVEL[max(hals)]


def build_profile(text: str, revision: str) -> dict:
    ops, level = parse_nnapi_support(text)
    return {
        "schema": "nnapi-device-profile/1", "name": "armnn", "type": "GPU", "feature_level": level,
        "version": f"Arm NN Android NN driver at {revision[:12]}",
        "source": {"repository": "ARM-software/android-nn-driver", "path": "NnapiSupport.txt",
                   "revision": revision, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                   "url": f"https://github.com/ARM-software/android-nn-driver/blob/{revision}/NnapiSupport.txt",
                   "notes": "Types are those Arm NN lists as supported on all its backends. The device type "
                            "depends on the driver's first backend (GpuAcc: GPU; CpuAcc/CpuRef: CPU); GPU here."},
        "operations": ops,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("support_txt")
    ap.add_argument("--revision", required=True, help="the android-nn-driver commit the file is from")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    with open(args.support_txt, encoding="utf-8") as f:
        profile = build_profile(f.read(), args.revision)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
