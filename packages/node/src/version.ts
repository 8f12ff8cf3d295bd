// Read from package.json when the package is built (esbuild inlines the one field), so a release changes one file.
import { name, version } from '../package.json';

/** The instrumentation scope of every meter, tracer and producer export of the node package. */
export const SCOPE = { name, version } as const;
