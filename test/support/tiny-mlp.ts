// The tiny MLP (4 → 8 relu → 3) of scripts/make-onnx-models.py, recomputed in JS so every
// output number is checked. ONNX loads it from the fixture; TF.js builds it from these weights.

export const w1 = (i: number, j: number): number => (((i * 3 + j * 5) % 7) - 3) / 4;
export const b1 = (j: number): number => ((j % 3) - 1) / 8;
export const w2 = (i: number, j: number): number => (((i * 2 + j * 7) % 5) - 2) / 4;
export const b2 = (j: number): number => j / 4;

/** The tiny MLP in JS: one row of 4 → 3. */
export function tinyMlp(row: ArrayLike<number>): number[] {
  const hidden = Array.from({ length: 8 }, (_, j) => {
    let sum = b1(j);
    for (let i = 0; i < 4; i++) sum += row[i] * w1(i, j);
    return Math.max(0, sum);
  });
  return Array.from({ length: 3 }, (_, j) => {
    let sum = b2(j);
    for (let i = 0; i < 8; i++) sum += hidden[i] * w2(i, j);
    return sum;
  });
}

export function maxAbsDiff(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(actual[i] - expected[i]));
  return max;
}
