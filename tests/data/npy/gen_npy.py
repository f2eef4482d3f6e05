# gen_npy.py - writes the .npy test vectors of tests/io/test_npy.c with NumPy itself
# (run with any NumPy >= 1.24: /usr/bin/python3 gen_npy.py; the files here came from 1.24.2).
import numpy as np
from numpy.lib import format as npf

def save(name, arr, version=None):
    with open(name, "wb") as f:
        npf.write_array(f, arr, version=version, allow_pickle=False)

save("f32_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3) / 4)
save("f64_vec.npy", np.array([1.5, -2.25, 1e300], dtype="<f8"))
save("i32_scalar.npy", np.array(-7, dtype="<i4"))
save("i64_3x1.npy", np.array([[1], [-(2 ** 40)], [3]], dtype="<i8"))
save("u8_empty.npy", np.zeros((0, 4), dtype="u1"))
save("bool_vec.npy", np.array([True, False, True]))
save("bytes_vec.npy", np.array([b"ab", b"", b"xyz"], dtype="S3"))
save("f32_be.npy", (np.arange(6, dtype="<f4").reshape(2, 3) / 4).astype(">f4"))
save("f32_fortran.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3) / 4))
save("f32_v2.npy", np.arange(6, dtype="<f4").reshape(2, 3) / 4, version=(2, 0))
save("i16_unsupported.npy", np.array([1, 2], dtype="<i2"))
