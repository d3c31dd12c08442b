#!/usr/bin/env python3
"""Writes the tensor-file fixtures of tests/unit/tensor_file_test.cpp (the
files are committed; this script documents how they were made and needs
numpy, which the test suite itself does not): .npy files by numpy.save, and a
safetensors file laid out as the safetensors reference writer does (8-byte
little-endian header length, JSON header with __metadata__, data)."""
import json
import os
import struct

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
np.save(os.path.join(here, "np_f32_2x3.npy"), (np.arange(6, dtype=np.float32) * 1.5).reshape(2, 3))
np.save(os.path.join(here, "np_f64_4.npy"), np.arange(4, dtype=np.float64) * 1.5)
np.save(os.path.join(here, "np_i32_2x2x2.npy"), (np.arange(8, dtype=np.int32) * 3 // 2).reshape(2, 2, 2))
np.save(os.path.join(here, "np_i64_scalar.npy"), np.array(42, dtype=np.int64))
np.save(os.path.join(here, "np_bool_5.npy"), np.arange(5) % 2 == 1)

w = np.array([[1, 2], [3, 4]], dtype=np.float32).tobytes()
b = np.array([7, -2, 3], dtype=np.int64).tobytes()
header = {
    "__metadata__": {"format": "pt", "note": "b before w in the data"},
    "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [len(b), len(b) + len(w)]},
    "b": {"dtype": "I64", "shape": [3], "data_offsets": [0, len(b)]},
}
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(os.path.join(here, "ref_two.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b + w)
