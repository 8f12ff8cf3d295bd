export { instrumentService } from './service';
export { createServerInterceptor } from './interceptor';
export type { GrpcModule } from './interceptor';
export { callTicket } from './call-ticket';
export type { GrpcInstrumentationOptions } from './options';
export { INFERENCE_PROTO_PATH, INFERENCE_SERVICE } from './proto';
