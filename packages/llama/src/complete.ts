import type { LlamaContextSequence, Token } from 'node-llama-cpp';
import { isTimeout, type Outcome, type StreamOutcome, type Ticket } from './glue';
import { LLAMA_ATTR } from './definition';
import type { Slot } from './slot';
import type { CompleteOptions, CompletionInput, CompletionResult } from './types';

type ShiftSize = CompleteOptions['contextShiftSize'];

/**
 * Handed-out tokens go to the stream (its tokens counter and last-token time) at the first callback (time
 * to first token), once at least this many have gathered, at the callback that reaches `maxTokens`, and at
 * the end: one counter update per batch instead of one per token, which is most of the wrapper's cost per
 * token where the counter is an OpenTelemetry SDK instrument (`add()` hashes its attributes on every call).
 * Time per output token stays exact: a completed generation's last token is either the one reaching
 * `maxTokens`, recorded at its callback, or followed by tokens never handed out (end of generation, a stop
 * trigger), which were counted at the end before as well. An open stream's counter lags by fewer than
 * this many tokens.
 */
const TOKEN_BATCH = 16;

/** What a finished generation reports to the model wrapper (which owns the counters). */
interface GenerationTally {
  contextShifts: number;
  promptTruncated: boolean;
}

export interface GenerationHooks {
  /** After a generation that shifted its context or had its prompt cut. */
  done(result: GenerationTally): void;
  /** An error in the measuring itself (never the generation's): counted, never thrown into the generation. */
  internalError(source: string, error: unknown): void;
}

/**
 * One completion on a free sequence of `slot` (the queue runs at most one generation per sequence), given
 * back when it ends. Token accounting comes from the runtime: `onToken`
 * marks the first token and counts tokens as they are handed out (grouped when bytes form one character;
 * added to the stream in batches, see TOKEN_BATCH); the sequence's token meter gives the exact number
 * generated, and tokens generated but never handed out (held partial characters, a stop trigger) are
 * counted when the stream ends. Context shifts are seen through `contextShiftSize`, which node-llama-cpp
 * resolves once before generating (where the prompt is fitted into the context) and once per shift; it is
 * passed only where a shift or a cut prompt is possible (see cannotShift).
 */
export async function generate(
  slot: Slot,
  ticket: Ticket,
  input: CompletionInput,
  options: CompleteOptions,
  hooks: GenerationHooks,
): Promise<CompletionResult> {
  const signal = options.signal;
  const stream = ticket.stream();
  // Nothing below throws before the try whose finally gives the sequence back.
  const entry = slot.acquire();
  const { sequence, completion } = entry;
  const meter = sequence.tokenMeter;
  const inputBefore = meter.usedInputTokens;
  const outputBefore = meter.usedOutputTokens;
  let handedOut = 0;
  let contextShifts = 0;
  let promptTruncated = false;
  const userOnToken = options.onToken;
  const userShiftSize = options.contextShiftSize;

  // Tokens handed out but not yet added to the stream (see TOKEN_BATCH).
  let unrecorded = 0;
  const lastToken = options.maxTokens !== undefined && options.maxTokens > 0 ? options.maxTokens : Infinity;
  const onToken = (tokens: Token[]) => {
    handedOut += tokens.length;
    // What the request still owes (its token backlog) is exact at every callback, not batched.
    ticket.produced(tokens.length);
    unrecorded += tokens.length;
    if (unrecorded >= TOKEN_BATCH || unrecorded === handedOut || handedOut >= lastToken) {
      stream.token(unrecorded);
      unrecorded = 0;
    }
    return userOnToken?.(tokens);
  };
  // Passed only where the generation could shift or its prompt be cut (see cannotShift): otherwise
  // node-llama-cpp's own default runs, and both counts are 0 by construction.
  const decide = (size: number, seq: LlamaContextSequence): number => {
    if (meter.usedOutputTokens > outputBefore) contextShifts++;
    else {
      try {
        promptTruncated = promptOverflows(input, seq, size);
      } catch (error) {
        hooks.internalError('llama.promptLength', error);
      }
    }
    return size;
  };
  const contextShiftSize = (seq: LlamaContextSequence): number | Promise<number> => {
    const size = resolveShiftSize(userShiftSize, seq);
    return typeof size === 'number' ? decide(size, seq) : size.then((s) => decide(s, seq));
  };

  let outcome: Outcome = 'error';
  try {
    const observed = cannotShift(input, options, sequence)
      ? { ...options, onToken }
      : { ...options, onToken, contextShiftSize };
    const response = await completion.generateCompletionWithMeta(input, observed);
    outcome = response.metadata.stopReason === 'abort' ? abortOutcome(signal) : 'completed';
    return {
      ...response,
      usage: {
        evaluatedTokens: meter.usedInputTokens - inputBefore,
        outputTokens: meter.usedOutputTokens - outputBefore,
      },
      contextShifts,
      promptTruncated,
    };
  } catch (error) {
    outcome = signal?.aborted ? abortOutcome(signal) : 'error';
    throw error;
  } finally {
    const generated = meter.usedOutputTokens - outputBefore;
    const rest = unrecorded + Math.max(0, generated - handedOut);
    if (rest > 0) stream.token(rest);
    stream.end(outcome as StreamOutcome);
    ticket.setAttributes({
      [LLAMA_ATTR.evaluatedTokens]: meter.usedInputTokens - inputBefore,
      [LLAMA_ATTR.outputTokens]: generated,
    });
    ticket.end(outcome);
    slot.giveBack(entry);
    if (contextShifts > 0 || promptTruncated) hooks.done({ contextShifts, promptTruncated });
  }
}

function abortOutcome(signal: AbortSignal | undefined): Outcome {
  return isTimeout(signal?.reason) ? 'deadline_exceeded' : 'cancelled';
}

/** node-llama-cpp's default shift: 10 % of the context. */
function resolveShiftSize(size: ShiftSize, sequence: LlamaContextSequence): number | Promise<number> {
  if (typeof size === 'number') return size;
  if (typeof size === 'function') return size(sequence);
  return Math.max(1, Math.floor(sequence.context.contextSize / 10));
}

/**
 * Whether this generation can neither shift its context nor have its prompt cut, from bounds alone: then
 * there is nothing for the `contextShiftSize` function to observe. node-llama-cpp shifts once the sequence
 * holds `contextSize − 1` tokens, and holds at most the prompt (with a beginning-of-sequence token) plus
 * `maxTokens`; a text prompt has at most one token per UTF-8 byte, plus one for a leading space (as in
 * promptOverflows). Undecided (no `maxTokens`, a LlamaText, an app's shift-size function): false.
 */
function cannotShift(input: CompletionInput, options: CompleteOptions, sequence: LlamaContextSequence): boolean {
  const { maxTokens, contextShiftSize } = options;
  if (maxTokens === undefined || !(maxTokens > 0) || typeof contextShiftSize === 'function') return false;
  let prompt: number;
  if (typeof input === 'string') prompt = Buffer.byteLength(input) + 2;
  else if (Array.isArray(input)) prompt = input.length + 1;
  else return false;
  const contextSize = sequence.context.contextSize;
  const shiftSize = Math.min(
    contextSize,
    Math.max(1, Math.floor(typeof contextShiftSize === 'number' ? contextShiftSize : contextSize / 10)),
  );
  return prompt + maxTokens <= contextSize - 2 && prompt <= contextSize - shiftSize;
}

/**
 * Whether node-llama-cpp will cut the prompt to fit: it keeps the last `contextSize − shift size` tokens,
 * the beginning-of-sequence token included, and tokenizes a string without its leading space when it
 * prepends that token. A string is tokenized here only when its UTF-8 length could exceed the room (a
 * token covers at least one byte), so short prompts cost nothing.
 */
function promptOverflows(input: CompletionInput, sequence: LlamaContextSequence, shiftSize: number): boolean {
  const model = sequence.model;
  const bos = model.tokens.shouldPrependBosToken && model.tokens.bos !== null;
  const room = sequence.context.contextSize - shiftSize - (bos ? 1 : 0);
  if (Array.isArray(input)) return input.length > room;
  if (typeof input !== 'string') return false;
  if (Buffer.byteLength(input) + 1 <= room) return false;
  return model.tokenize(input, false, bos ? 'trimLeadingSpace' : undefined).length > room;
}
