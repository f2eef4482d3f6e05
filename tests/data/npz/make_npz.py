# Writes .npz files the way numpy.savez / savez_compressed do (numpy/lib/npyio.py _savez:
# zipfile.ZipFile(file, mode="w", compression=ZIP_STORED or ZIP_DEFLATED, allowZip64=True),
# each array written with zipf.open(key + '.npy', 'w', force_zip64=True) as
# numpy.lib.format.write_array does (format 1.0 header padded to 64 bytes).
import struct, zipfile, sys
def npy(descr, shape, data):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)) if len(shape)!=1 else '(%d,)'%shape[0])
    pad = 64 - (10 + len(d) + 1) % 64
    h = (d + ' '*pad + '\n').encode('latin1')
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h + data
def savez(path, arrays, compressed):
    comp = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, mode='w', compression=comp, allowZip64=True) as z:
        for k, b in arrays:
            with z.open(k + '.npy', 'w', force_zip64=True) as f:
                f.write(b)
# a miniature mnist.npz in Keras's layout: x_* uint8 [n, 28, 28], y_* uint8 [n]
def img(n, seed):
    return bytes(((i * 7 + seed * 13) % 256) for i in range(n * 28 * 28))
def lab(n, seed):
    return bytes(((i + seed) % 10) for i in range(n))
arrays = [('x_train', npy('|u1', (3, 28, 28), img(3, 1))), ('y_train', npy('|u1', (3,), lab(3, 1))),
          ('x_test', npy('|u1', (2, 28, 28), img(2, 2))), ('y_test', npy('|u1', (2,), lab(2, 2)))]
savez(sys.argv[1] + '/mnist_mini.npz', arrays, True)
savez(sys.argv[1] + '/mnist_mini_stored.npz', arrays, False)
savez(sys.argv[2] + '/stored.npz', [('a', npy('<f4', (2, 3), struct.pack('<6f', *range(6))))], False)
savez(sys.argv[2] + '/deflated.npz', [('x', npy('<i8', (3, 4), struct.pack('<12q', *range(12)))), ('y', npy('|u1', (2,), b'\x01\x02'))], True)
