// Runs a TypeScript worker body (workerData.file) through tsx: worker threads do not inherit the
// test runner's TypeScript support.
import { workerData } from 'node:worker_threads'
import { tsImport } from 'tsx/esm/api'

await tsImport(workerData.file, import.meta.url)
