/**
 * The gRPC server call duration (`rpc`), in the current RPC semantic
 * conventions and, opted in, the older ones; recorded by @infersignal/grpc.
 * No threshold or alert of its own: a call's queue wait and outcome are the
 * queue signals'.
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';

const metrics = {
  rpcCallDuration: {
    name: 'rpc.server.call.duration',
    type: 'histogram',
    unit: 's',
    description:
      "Duration of a gRPC server call, by final status. `error.type` is the status name for UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS (the gRPC conventions' server errors).",
    attributes: [ATTR.rpcSystemName, ATTR.rpcMethod, ATTR.rpcResponseStatusCode, ATTR.errorType],
  },
  rpcCallDurationOld: {
    name: 'rpc.server.duration',
    type: 'histogram',
    unit: 'ms',
    description:
      'Duration of a gRPC server call in the older RPC conventions (semantic-conventions v1.37), emitted beside rpc.server.call.duration only with OTEL_SEMCONV_STABILITY_OPT_IN=rpc/dup.',
    attributes: [ATTR.rpcSystem, ATTR.rpcService, ATTR.rpcMethod, ATTR.rpcGrpcStatusCode],
  },
} as const;

export const rpcSignal = defineSignal({
  name: 'rpc',
  metrics,
  buckets: {
    // The RPC conventions' boundaries (as http.server.request.duration's), and the older conventions' in ms.
    [metrics.rpcCallDuration.name]: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
    [metrics.rpcCallDurationOld.name]: [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000],
  },
  panels(k) {
    const job = k.select.job;
    const method = k.label(ATTR.rpcMethod);
    const status = k.label(ATTR.rpcResponseStatusCode);
    const calls = `${k.metric(metrics.rpcCallDuration)}_count`;
    k.row('gRPC');
    k.add({
      title: 'gRPC calls by status',
      description: 'Calls that ended, per second, by method and final status code.',
      w: 12,
      unit: 'reqps',
      targets: [
        {
          expr: `sum by (${method}, ${status}) (${k.rate(calls, job)})`,
          legend: `{{${method}}} {{${status}}}`,
        },
      ],
    });
    k.add({
      title: 'gRPC call duration P95',
      description: 'From the call’s arrival to its final status, by method.',
      w: 12,
      unit: 's',
      targets: [
        {
          expr: `histogram_quantile(0.95, sum by (le, ${method}) (${k.rate(k.bucket(metrics.rpcCallDuration), job)}))`,
          legend: `{{${method}}}`,
        },
      ],
    });
  },
});
