import { createRequire } from 'node:module';
import { start } from '@infersignal/node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
const require = createRequire(import.meta.url);
const ah = require('internal/async_hooks');
const state = (label: string) => {
  const f = ah.getHookArrays ? null : null;
  const { async_hook_fields, constants } = require('internal/test/binding').internalBinding('async_wrap');
  console.log(
    label,
    'init hooks',
    async_hook_fields[constants.kInit],
    'promise hooks?',
    async_hook_fields[constants.kTotals],
    'usesExecutionAsyncResource',
    async_hook_fields[constants.kUsesExecutionAsyncResource],
  );
};
state('before');
const exporter = {
  export: (_s: unknown, cb: (r: { code: number }) => void) => cb({ code: 0 }),
  shutdown: async () => {},
};
const mode = process.argv[2];
const signal = start({
  serviceName: 'x',
  prometheus: { host: '127.0.0.1', port: 0 },
  otlp: false,
  ...(mode === 'outliers'
    ? { traces: 'outliers' as const, spanProcessors: [new BatchSpanProcessor(exporter as never)] }
    : { traces: false }),
});
await signal.prometheus!.ready;
state('after start');
const q = signal.monitor.queue('http');
for (let i = 0; i < 5000; i++) {
  const t = q.enqueue('m');
  t.start();
  t.end(i % 50 === 0 ? 'error' : 'completed');
}
await new Promise((r) => setTimeout(r, 6000));
state('after export');
process.exit(0);
