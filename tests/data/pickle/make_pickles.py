# Writes CIFAR-10-style batches with Python's own pickle module, the arrays pickled as
# NumPy pickles them: ndarray.__reduce__ returns (numpy.core.multiarray._reconstruct,
# (numpy.ndarray, (0,), b'b'), state) with state = (1, shape, dtype, is_fortran, raw
# bytes), and dtype.__reduce__ returns (numpy.dtype, ('u1', False, True), (3, '|', None,
# None, None, -1, -1, 0)). NumPy is not installed where these were made, so a minimal
# stand-in registers those names in sys.modules for pickle to find (it only needs the
# module and attribute names; nothing here is NumPy's code).
# Run: python3 tests/data/pickle/make_pickles.py tests/data/pickle fuzz/seeds/fuzz_pickle
import pickle, sys, types

core = types.ModuleType('numpy.core'); mult = types.ModuleType('numpy.core.multiarray')
np = types.ModuleType('numpy')
sys.modules.update({'numpy': np, 'numpy.core': core, 'numpy.core.multiarray': mult})

def _reconstruct(*a): raise RuntimeError('not for loading')
_reconstruct.__module__ = 'numpy.core.multiarray'; mult._reconstruct = _reconstruct

class dtype:
    def __init__(self, code, order): self.code, self.order = code, order
    def __reduce__(self):
        return (dtype, (self.code, False, True), (3, self.order, None, None, None, -1, -1, 0))
class ndarray:
    def __init__(self, shape, dt, raw, fortran=False): self.shape, self.dt, self.raw, self.f = shape, dt, raw, fortran
    def __reduce__(self):
        return (_reconstruct, (ndarray, (0,), b'b'), (1, self.shape, self.dt, self.f, self.raw))
for c in (dtype, ndarray): c.__module__ = 'numpy'
np.dtype, np.ndarray = dtype, ndarray

def batch(n, seed, label):
    data = bytes(((i * 3 + seed * 11) % 256) for i in range(n * 3072))
    return {b'batch_label': label.encode(), b'labels': [(i * 7 + seed) % 10 for i in range(n)],
            b'data': ndarray((n, 3072), dtype('u1', '|'), data),
            b'filenames': [b'img_%d_%d.png' % (seed, i) for i in range(n)]}

out, seeds = sys.argv[1], sys.argv[2]
d = out + '/cifar-10-batches-py'
import os; os.makedirs(d, exist_ok=True)
for i in range(1, 6):   # protocol 2, as the distributed batches (written by Python 2's cPickle)
    with open('%s/data_batch_%d' % (d, i), 'wb') as f: pickle.dump(batch(2, i, 'training batch %d of 5' % i), f, protocol=2)
with open(d + '/test_batch', 'wb') as f: pickle.dump(batch(3, 9, 'testing batch 1 of 1'), f, protocol=2)
# other protocols and dtypes for the reader's own test
misc = {'f8_be': ndarray((2, 2), dtype('f8', '>'), b''.join(__import__('struct').pack('>d', v) for v in (1.5, -2.0, 3.25, 4.0))),
        'i4_fortran': ndarray((2, 3), dtype('i4', '<'), b''.join(__import__('struct').pack('<i', v) for v in (1, 4, 2, 5, 3, 6)), True),
        'floats': [0.5, -1.25], 'name': 'caf\u00e9', 'count': 123456789012}
for p in (2, 3, 4, 5):
    with open('%s/misc_p%d.pkl' % (out, p), 'wb') as f: pickle.dump(misc, f, protocol=p)
os.makedirs(seeds, exist_ok=True)
with open(seeds + '/batch_p2', 'wb') as f: pickle.dump(batch(1, 1, 'x'), f, protocol=2)
with open(seeds + '/misc_p4', 'wb') as f: pickle.dump(misc, f, protocol=4)
