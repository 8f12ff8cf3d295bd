import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Test setup for graph models: no tfjs-converter (Python) on these
 * machines, so the converter's output is written by hand — a `model.json`
 * with `format: "graph-model"`, a GraphDef as JSON in `modelTopology`, and
 * a `weightsManifest` naming `weights.bin`, where the `Const` nodes' values
 * live (the converter strips them out of the GraphDef the same way).
 *
 *   x: Placeholder float [-1, 4]
 *   w: Const [4, 3]   b: Const [3]
 *   y = Relu(AddV2(MatMul(x, w), b))
 */

const W = (i: number, j: number) => (((i * 3 + j * 5) % 7) - 3) / 4;
const B = (j: number) => (j - 1) / 8;

export interface GraphWeights {
  w(i: number, j: number): number;
  b(j: number): number;
}

/** The default weights; `shifted` is a second set, so a reload's outputs differ from the first load's. */
export const GRAPH_WEIGHTS: GraphWeights = { w: W, b: B };
export const SHIFTED_WEIGHTS: GraphWeights = { w: (i, j) => -W(i, j), b: (j) => B(j) + 0.5 };

/** The reference: relu(x·w + b), computed in plain JS. */
export function graphReference(row: ArrayLike<number>, weights: GraphWeights = GRAPH_WEIGHTS): number[] {
  return Array.from({ length: 3 }, (_, j) => {
    let sum = weights.b(j);
    for (let i = 0; i < 4; i++) sum += row[i] * weights.w(i, j);
    return Math.max(0, sum);
  });
}

const float = { type: 'DT_FLOAT' };
const dims = (...sizes: number[]) => ({ dim: sizes.map((size) => ({ size: String(size) })) });
const constNode = (name: string, ...shape: number[]) => ({
  name,
  op: 'Const',
  attr: { dtype: float, value: { tensor: { dtype: 'DT_FLOAT', tensorShape: dims(...shape) } } },
});

/** The GraphDef; `matmulInputs` lets a test point MatMul at a node that does not exist. */
export function graphDef(matmulInputs: [string, string] = ['x', 'w']) {
  return {
    node: [
      { name: 'x', op: 'Placeholder', attr: { dtype: float, shape: { shape: dims(-1, 4) } } },
      constNode('w', 4, 3),
      constNode('b', 3),
      {
        name: 'MatMul',
        op: 'MatMul',
        input: matmulInputs,
        attr: { T: float, transpose_a: { b: false }, transpose_b: { b: false } },
      },
      { name: 'add', op: 'AddV2', input: ['MatMul', 'b'], attr: { T: float } },
      { name: 'y', op: 'Relu', input: ['add'], attr: { T: float } },
    ],
    library: {},
    versions: { producer: 1482 },
  };
}

/** Writes `dir/model.json` + `dir/weights.bin`; returns the model.json path. */
export function writeGraphModel(
  dir: string,
  weights: GraphWeights = GRAPH_WEIGHTS,
  topology: object = graphDef(),
): string {
  mkdirSync(dir, { recursive: true });
  const values = new Float32Array(4 * 3 + 3);
  for (let i = 0; i < 4; i++) for (let j = 0; j < 3; j++) values[i * 3 + j] = weights.w(i, j);
  for (let j = 0; j < 3; j++) values[12 + j] = weights.b(j);
  writeFileSync(join(dir, 'weights.bin'), Buffer.from(values.buffer));
  const modelJson = {
    format: 'graph-model',
    generatedBy: '2.16.1',
    convertedBy: 'hand-written test fixture (infersignal)',
    modelTopology: topology,
    weightsManifest: [
      {
        paths: ['weights.bin'],
        weights: [
          { name: 'w', shape: [4, 3], dtype: 'float32' },
          { name: 'b', shape: [3], dtype: 'float32' },
        ],
      },
    ],
  };
  const path = join(dir, 'model.json');
  writeFileSync(path, JSON.stringify(modelJson));
  return path;
}
