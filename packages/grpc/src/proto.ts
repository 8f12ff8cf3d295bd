import { fileURLToPath } from 'node:url';

/**
 * Absolute path of `proto/inference.proto`: the token-streaming inference
 * service (unary `Infer`, server-streaming `Generate`, client-streaming
 * `SubmitBatch`, bidi `Chat`) used by the tests, the example and the load
 * generator. Load it with `@grpc/proto-loader`.
 */
export const INFERENCE_PROTO_PATH: string = fileURLToPath(new URL('../proto/inference.proto', import.meta.url));

/** Fully qualified name of the service in that proto. */
export const INFERENCE_SERVICE = 'infersignal.inference.v1.Inference';
