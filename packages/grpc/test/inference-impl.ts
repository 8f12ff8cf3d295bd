import type * as grpc from '@grpc/grpc-js';

/**
 * The test server's handlers, plain grpc-js code that knows nothing of
 * InferSignal. Request fields ask for delays and failures:
 * - Infer: `simulateDelayMs`, `simulateStatus`; prompt `throw` makes the handler throw.
 * - Generate: `maxTokens` (default 5), `simulateTokenDelayMs`,
 *   `simulateFirstTokenDelayMs`, `simulateStatus` (emitted as an error after
 *   the tokens); prompt `stall-after-2` sends 2 tokens, then waits for the
 *   client to go away.
 */
export function inferenceImpl(
  calls: { handled: number } = { handled: 0 },
  hold?: Promise<void>,
): grpc.UntypedServiceImplementation {
  return {
    Infer(call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) {
      calls.handled++;
      const { prompt, simulateDelayMs, simulateStatus, model } = call.request;
      if (prompt === 'throw') throw new Error('handler bug');
      const answer = () =>
        simulateStatus
          ? callback({ code: simulateStatus, details: 'simulated' })
          : callback(null, { model, output: `echo ${prompt}`, tokens: 2 });
      if (hold) void hold.then(answer);
      else if (simulateDelayMs) setTimeout(answer, simulateDelayMs);
      else answer();
    },

    Generate(call: grpc.ServerWritableStream<any, any>) {
      calls.handled++;
      const { prompt, maxTokens, simulateTokenDelayMs, simulateFirstTokenDelayMs, simulateStatus } = call.request;
      const count = maxTokens || 5;
      let index = 0;
      const next = () => {
        if (call.cancelled) return;
        if (prompt === 'stall-after-2' && index === 2) return;
        if (index === count) {
          if (simulateStatus) call.emit('error', { code: simulateStatus, details: 'simulated' });
          else call.end();
          return;
        }
        call.write({ index, text: `t${index}` });
        index++;
        setTimeout(next, simulateTokenDelayMs);
      };
      setTimeout(next, simulateFirstTokenDelayMs);
    },

    SubmitBatch(call: grpc.ServerReadableStream<any, any>, callback: grpc.sendUnaryData<any>) {
      calls.handled++;
      let requests = 0;
      call.on('data', () => requests++);
      call.on('end', () => callback(null, { requests, tokens: requests * 2 }));
    },

    Chat(call: grpc.ServerDuplexStream<any, any>) {
      calls.handled++;
      let index = 0;
      call.on('data', (turn: { text: string; maxTokens: number }) => {
        if (turn.text === 'fail') {
          call.emit('error', { code: 14, details: 'backend went away' });
          return;
        }
        for (let i = 0; i < (turn.maxTokens || 3); i++) call.write({ index: index++, text: `${turn.text}-${i}` });
      });
      call.on('end', () => call.end());
    },
  };
}
