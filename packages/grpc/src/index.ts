export { instrumentService } from './service';
export { createServerInterceptor } from './interceptor';
export type { GrpcModule } from './interceptor';
export { callTicket } from './call-ticket';
export type { GrpcInstrumentationOptions, GrpcMethodInfo } from './options';
export type { ShedStatus } from './call-signal';
export { GRPC_STATUS } from './status';
export type { GrpcStatusName } from './status';
export { INFERENCE_PROTO_PATH, INFERENCE_SERVICE } from './proto';
