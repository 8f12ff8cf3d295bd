import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import express from 'express';
import { createMonitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/express';
const app = express();
const monitor = createMonitor({ exportMode: 'producer', traces: false, detectorIntervalMs: 0, eventLoop: false, logger: { warn() {} } });
const mw = process.env.ARM === 'floor' ? (_req, res, next) => { const t0 = performance.now(); res.on('finish', () => { globalThis.x = performance.now() - t0; }); next(); } : inferSignal(monitor);
const socket = new Socket();
const headers = { 'content-type': 'application/json; charset=utf-8' };
const next = () => {};
function one() {
  const req = new IncomingMessage(socket); req.complete = true;
  const res = new ServerResponse(req);
  Object.setPrototypeOf(req, app.request); Object.setPrototypeOf(res, app.response);
  req.res = res;
  if (process.env.ARM !== 'bare') mw(req, res, next);
  res.writeHead(200, headers); res.finished = true; res.emit('finish'); res.emit('close');
}
const N = +(process.env.N ?? 300000);
for (let r = 0; r < 5; r++) { const t0 = process.cpuUsage(); for (let i = 0; i < N; i++) one(); const d = process.cpuUsage(t0); console.log(process.env.ARM ?? 'mw', ((d.user + d.system) * 1000 / N).toFixed(0), 'ns/req'); }
