#!/usr/bin/python3
"""Makes the small ONNX models committed under packages/onnx/test/fixtures/.

Run with Debian's python3-onnx (onnx 1.12, no numpy needed):

    /usr/bin/python3 scripts/make-onnx-models.py

The weights follow formulas that the tests recompute in JavaScript, so a
test can check every number the runtime returns without a second runtime.

- tiny-mlp.onnx: x[N,4] -> MatMul W1[4,8] + b1 -> Relu -> MatMul W2[8,3] + b2 -> y[N,3]
  W1[i][j] = ((i*3 + j*5) % 7 - 3) / 4, b1[j] = (j % 3 - 1) / 8,
  W2[i][j] = ((i*2 + j*7) % 5 - 2) / 4, b2[j] = j / 4.
- matmul-chain.onnx: x[N,512] -> (MatMul Wk[512,512] -> Relu) for k in 0..1 -> y[N,512]
  Wk[i][j] = ((i*7 + j*13 + k*5) % 17 - 8) / 256. Two layers = 2 MiB of
  float32; with N = 128 one run is a few ms on one CPU thread, so queueing
  in the tests is real.
- unsupported-opset.onnx: the tiny Relu graph stamped with opset 99 (no
  runtime implements it), for the load-failure test.
"""

import os
import struct

from onnx import TensorProto, helper, save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'packages', 'onnx', 'test', 'fixtures')
OPSET = 13


def tensor(name, rows, cols, value):
    values = [value(i, j) for i in range(rows) for j in range(cols)]
    raw = struct.pack('<%df' % len(values), *values)
    return helper.make_tensor(name, TensorProto.FLOAT, [rows, cols], raw, raw=True)


def vector(name, size, value):
    values = [value(j) for j in range(size)]
    raw = struct.pack('<%df' % len(values), *values)
    return helper.make_tensor(name, TensorProto.FLOAT, [size], raw, raw=True)


def model(graph, opset=OPSET):
    m = helper.make_model(graph, producer_name='infersignal-make-onnx-models', opset_imports=[helper.make_opsetid('', opset)])
    # onnxruntime 1.30 reads IR 8 fine; pin it so the file does not change with the onnx version.
    m.ir_version = 8
    return m


def tiny_mlp():
    nodes = [
        helper.make_node('MatMul', ['x', 'W1'], ['h0']),
        helper.make_node('Add', ['h0', 'b1'], ['h1']),
        helper.make_node('Relu', ['h1'], ['h2']),
        helper.make_node('MatMul', ['h2', 'W2'], ['h3']),
        helper.make_node('Add', ['h3', 'b2'], ['y']),
    ]
    inits = [
        tensor('W1', 4, 8, lambda i, j: ((i * 3 + j * 5) % 7 - 3) / 4),
        vector('b1', 8, lambda j: (j % 3 - 1) / 8),
        tensor('W2', 8, 3, lambda i, j: ((i * 2 + j * 7) % 5 - 2) / 4),
        vector('b2', 3, lambda j: j / 4),
    ]
    graph = helper.make_graph(
        nodes, 'tiny_mlp',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 4])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 3])],
        inits,
    )
    return model(graph)


def matmul_chain(layers=2, dim=512):
    nodes, inits = [], []
    prev = 'x'
    for k in range(layers):
        w, mm = 'W%d' % k, 'mm%d' % k
        out = 'y' if k == layers - 1 else 'r%d' % k
        inits.append(tensor(w, dim, dim, lambda i, j, k=k: ((i * 7 + j * 13 + k * 5) % 17 - 8) / 256))
        nodes.append(helper.make_node('MatMul', [prev, w], [mm]))
        nodes.append(helper.make_node('Relu', [mm], [out]))
        prev = out
    graph = helper.make_graph(
        nodes, 'matmul_chain',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', dim])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', dim])],
        inits,
    )
    return model(graph)


def unsupported_opset():
    graph = helper.make_graph(
        [helper.make_node('Relu', ['x'], ['y'])], 'future_relu',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 4])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 4])],
    )
    return model(graph, opset=99)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, m in [('tiny-mlp.onnx', tiny_mlp()), ('matmul-chain.onnx', matmul_chain()), ('unsupported-opset.onnx', unsupported_opset())]:
        path = os.path.join(OUT, name)
        save(m, path)
        print('%s %d bytes' % (os.path.relpath(path), os.path.getsize(path)))


if __name__ == '__main__':
    main()
