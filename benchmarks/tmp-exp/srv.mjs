import Fastify from 'fastify';
import { start } from '@infersignal/node';
const mode = process.argv[2];
if (mode === 'timers')
  start({
    serviceName: 'x',
    prometheus: { host: '127.0.0.1', port: 0 },
    otlp: false,
    traces: false,
    exportMode: 'producer',
  });
const app = Fastify();
app.get('/v1/infer', async () => ({ ok: true, tokens: 3 }));
await app.listen({ host: '127.0.0.1', port: Number(process.argv[3]) });
console.log('ready', process.pid);
