import { readFileSync } from 'node:fs';
import type { BenchConfig, TargetKind } from './types';

/** Bodies kept from a JSONL file: bounded so a huge file cannot exhaust memory. */
const MAX_LINES = 100_000;

export interface BodySource {
  /** Encoded payload for request `seq`. */
  get(seq: number): unknown;
}

/** Reads a JSONL file: one JSON value per non-empty line. Throws naming the line on bad JSON. */
export function readJsonl(path: string): unknown[] {
  const text = readFileSync(path, 'utf8');
  const out: unknown[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && out.length < MAX_LINES; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    try {
      out.push(JSON.parse(line));
    } catch (err) {
      throw new Error(`bench: ${path}:${i + 1} is not valid JSON (${(err as Error).message})`);
    }
  }
  if (out.length === 0) throw new Error(`bench: ${path} has no bodies`);
  return out;
}

/**
 * The request body for one item: OpenAI targets take a prompt (string) or a
 * partial body (`{ prompt }`, `{ messages }`) and get model/stream/max_tokens
 * filled in; other targets send the item as it is.
 */
export function toRequestBody(
  kind: TargetKind,
  item: unknown,
  config: Pick<BenchConfig, 'model' | 'maxTokens' | 'stream'>,
): unknown {
  if (kind !== 'openai-chat' && kind !== 'openai-completions') return item;
  const stream = config.stream ?? true;
  const base: Record<string, unknown> = { model: config.model ?? 'default', stream };
  if (config.maxTokens !== undefined) base.max_tokens = config.maxTokens;
  const isObject = typeof item === 'object' && item !== null && !Array.isArray(item);
  if (isObject) return { ...base, ...(item as Record<string, unknown>) };
  const prompt = item === undefined || item === null ? 'Hello' : String(item);
  return kind === 'openai-chat' ? { ...base, messages: [{ role: 'user', content: prompt }] } : { ...base, prompt };
}

export function createBodySource(
  kind: TargetKind,
  config: BenchConfig,
  encode: (body: unknown) => unknown,
): BodySource {
  if (config.bodies) {
    const generate = config.bodies;
    return { get: (seq) => encode(toRequestBody(kind, generate(seq), config)) };
  }
  const items = config.bodiesFile ? readJsonl(config.bodiesFile) : [config.body];
  const encoded = items.map((item) => encode(toRequestBody(kind, item, config)));
  return { get: (seq) => encoded[seq % encoded.length] };
}
