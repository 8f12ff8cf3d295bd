import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { io } from '@tensorflow/tfjs-core';

/**
 * An IOHandler that reads and writes `model.json` + `weights.bin` with
 * node:fs. `tf.io.fileSystem` (`file://` URLs) only exists in tfjs-node;
 * this one also works with the pure-JS `@tensorflow/tfjs` package.
 */
export function fileSystemHandler(modelJsonPath: string): io.IOHandler {
  const dir = dirname(modelJsonPath);
  return {
    async load(): Promise<io.ModelArtifacts> {
      const json = JSON.parse(await readFile(modelJsonPath, 'utf8')) as io.ModelJSON;
      const weightSpecs: io.WeightsManifestEntry[] = [];
      const buffers: Buffer[] = [];
      for (const group of json.weightsManifest ?? []) {
        weightSpecs.push(...group.weights);
        for (const path of group.paths) buffers.push(await readFile(join(dir, path)));
      }
      const all = Buffer.concat(buffers);
      const artifacts: io.ModelArtifacts = {
        modelTopology: json.modelTopology,
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
        weightSpecs,
        weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer,
      };
      if (json.trainingConfig) artifacts.trainingConfig = json.trainingConfig;
      if (json.signature) artifacts.signature = json.signature;
      if (json.userDefinedMetadata) artifacts.userDefinedMetadata = json.userDefinedMetadata;
      if (json.modelInitializer) artifacts.modelInitializer = json.modelInitializer;
      return artifacts;
    },
    async save(artifacts: io.ModelArtifacts): Promise<io.SaveResult> {
      await mkdir(dir, { recursive: true });
      const weightsName = `${basename(modelJsonPath, '.json')}.weights.bin`;
      const parts =
        artifacts.weightData === undefined
          ? []
          : Array.isArray(artifacts.weightData)
            ? artifacts.weightData
            : [artifacts.weightData];
      const weights = Buffer.concat(parts.map((b) => Buffer.from(b)));
      if (artifacts.modelTopology instanceof ArrayBuffer)
        throw new TypeError('fileSystemHandler saves JSON topologies only (got a binary GraphDef)');
      const json: io.ModelJSON = {
        modelTopology: artifacts.modelTopology ?? {},
        format: artifacts.format,
        generatedBy: artifacts.generatedBy,
        convertedBy: artifacts.convertedBy,
        weightsManifest: [{ paths: [weightsName], weights: artifacts.weightSpecs ?? [] }],
      };
      if (artifacts.trainingConfig) json.trainingConfig = artifacts.trainingConfig;
      if (artifacts.signature) json.signature = artifacts.signature;
      if (artifacts.userDefinedMetadata) json.userDefinedMetadata = artifacts.userDefinedMetadata;
      await writeFile(join(dir, weightsName), weights);
      const text = JSON.stringify(json);
      await writeFile(modelJsonPath, text);
      return {
        modelArtifactsInfo: {
          dateSaved: new Date(),
          modelTopologyType: 'JSON',
          modelTopologyBytes: Buffer.byteLength(text),
          weightSpecsBytes: Buffer.byteLength(JSON.stringify(json.weightsManifest)),
          weightDataBytes: weights.byteLength,
        },
      };
    },
  };
}
