"""`nnapi export` of a stateful model: the header documents the state pairs, and the generated
accessors (compiled with gcc against the stand-in NeuralNetworks.h) return each pair's input,
output, name and initial value as the model holds them."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from converters.export import export_c
from converters.tflite import convert

from tests.converters.test_export import CFLAGS, GCC, ndk  # noqa: F401  (the ndk fixture)
from tests.converters.tflite.state_models import accumulator, int8_stream

pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is needed to compile the exported C")

DRIVER = r"""
#include <stdio.h>
#include "m_model.h"
int main(void) {
    printf("count %u\n", (unsigned)M_STATE_COUNT);
    for (uint32_t s = 0; s <= M_STATE_COUNT; s++) {
        const unsigned char* v = m_state_initial(s);
        printf("state %u %u %u %s", (unsigned)s, (unsigned)m_state_input(s), (unsigned)m_state_output(s),
               m_state_name(s) ? m_state_name(s) : "(null)");
        if (v) {
            printf(" ");
            for (size_t k = 0; k < m_input_bytes(m_state_input(s)); k++) printf("%02x", v[k]);
        }
        printf("\n");
    }
    return 0;
}
"""


@pytest.mark.parametrize("make, level", [(int8_stream, 8), (int8_stream, 3), (accumulator, 8)])
def test_exported_state_accessors(make, level, ndk, tmp_path):  # noqa: F811
    model = convert(make(), feature_level=level).model
    assert model.state
    export_c(model, tmp_path / "out", name="m")
    header = (tmp_path / "out" / "m_model.h").read_text()
    for v in model.state:
        assert f'"{v.variable}", output {v.output} -> input {v.input}' in header
    (tmp_path / "driver.c").write_text(DRIVER)
    exe = tmp_path / "prog"
    subprocess.run([GCC, *CFLAGS, f"-I{ndk / 'include'}", f"-I{tmp_path / 'out'}", str(tmp_path / "driver.c"),
                    str(tmp_path / "out" / "m_model.c"), str(ndk / "shim.o"), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0] == f"count {len(model.state)}"
    for k, v in enumerate(model.state):
        assert lines[1 + k] == (f"state {k} {v.input} {v.output} {v.variable} "
                                f"{np.ascontiguousarray(v.initial).tobytes().hex()}")
    assert lines[-1] == f"state {len(model.state)} 4294967295 4294967295 (null)"
