import type { Attributes } from '@opentelemetry/api';
import type { SignalContext } from '../contract';
import { ATTR } from '../names';
import type { Outcome } from '../types';

/** The attributes the GenAI conventions put on every gen_ai.server.* metric, for one model. */
export function genAiAttributes(ctx: SignalContext, model: string): Attributes {
  return {
    [ATTR.operationName]: ctx.genAi.operationName,
    [ATTR.providerName]: ctx.genAi.providerName,
    [ATTR.model]: model,
  };
}

/**
 * `error.type` of a request that ended with `outcome`: none when it
 * completed; the outcome itself for the failures core tells apart (a
 * low-cardinality class, as the conventions ask); `_OTHER`, the
 * conventions' fallback, for a plain error.
 */
function errorTypeOf(outcome: Outcome): string | undefined {
  if (outcome === 'completed') return undefined;
  return outcome === 'error' ? '_OTHER' : outcome;
}

/** gen_ai.server.request.duration's attribute set of each outcome, made once per (queue, model). */
export function requestDurationAttributes(
  ctx: SignalContext,
  queue: string,
  model: string,
  outcomes: readonly Outcome[],
): Record<Outcome, Attributes> {
  const base = genAiAttributes(ctx, model);
  return Object.fromEntries(
    outcomes.map((outcome) => {
      const errorType = errorTypeOf(outcome);
      const attributes: Attributes = { ...base, [ATTR.queue]: queue, [ATTR.outcome]: outcome };
      if (errorType !== undefined) attributes[ATTR.errorType] = errorType;
      return [outcome, attributes];
    }),
  ) as Record<Outcome, Attributes>;
}
