import { fileURLToPath } from 'node:url';
import * as transformers from '@huggingface/transformers';

export { transformers };

/** The folder scripts/make-transformers-models.py writes; the library reads model ids under it, never a hub. */
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** Local folders only: a model id that is not there fails instead of being downloaded. */
export function offline(): void {
  transformers.env.allowRemoteModels = false;
  transformers.env.allowLocalModels = true;
  transformers.env.localModelPath = FIXTURES;
  transformers.env.useFSCache = false;
}

export const PIPELINE_OPTIONS = { local_files_only: true } as const;

export { type Harness, harness } from '../../../test/support/model-harness';

// The tiny models of scripts/make-transformers-models.py, recomputed here so every number can be checked.
const VOCAB = [
  '[PAD]',
  '[UNK]',
  '[CLS]',
  '[SEP]',
  '[EOS]',
  'the',
  'cat',
  'sat',
  'on',
  'mat',
  'dog',
  'ran',
  'a',
  'movie',
  'was',
  'is',
  'very',
  'not',
  'good',
  'great',
  'fun',
  'bad',
  'awful',
  'boring',
];
const ID = new Map(VOCAB.map((w, i) => [w, i]));
const HIDDEN = 8;

/** Word-level ids of a text, as the fixtures' tokenizer makes them (lower-cased, split on spaces). */
export function ids(text: string, bert = true): number[] {
  const words = text
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => ID.get(w) ?? 1);
  return bert ? [ID.get('[CLS]')!, ...words, ID.get('[SEP]')!] : words;
}

/** tiny-bert-embed with mean pooling and L2 normalization. */
export function embedding(text: string): number[] {
  const tokens = ids(text);
  const mean = new Array(HIDDEN).fill(0);
  for (const v of tokens) for (let h = 0; h < HIDDEN; h++) mean[h] += (((v * 3 + h * 5) % 11) - 5) / 8 / tokens.length;
  const norm = Math.hypot(...mean);
  return mean.map((x) => x / norm);
}

/** tiny-bert-sentiment: softmax over (negative words, positive words). */
export function sentiment(text: string): { label: string; score: number } {
  let neg = 0;
  let pos = 0;
  for (const v of ids(text)) {
    if (['bad', 'awful', 'boring'].includes(VOCAB[v])) neg++;
    if (['good', 'great', 'fun'].includes(VOCAB[v])) pos++;
  }
  const p = 1 / (1 + Math.exp(neg - pos));
  return p >= 0.5 ? { label: 'POSITIVE', score: p } : { label: 'NEGATIVE', score: 1 - p };
}

/** tiny-gpt2's greedy continuation: a bigram table. */
const NEXT: Record<string, string> = {
  the: 'cat',
  cat: 'sat',
  sat: 'on',
  on: 'the',
  dog: 'ran',
  ran: '[EOS]',
  a: 'dog',
};
export function continuation(last: string, steps: number): string[] {
  const out: string[] = [];
  let word = last;
  for (let i = 0; i < steps && word !== '[EOS]'; i++) out.push((word = NEXT[word] ?? '[PAD]'));
  return out;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let max = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < Math.min(a.length, b.length); i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}
