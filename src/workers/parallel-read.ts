import { workerData } from 'node:worker_threads';
import { type ParallelReadWorkerData, readChunks } from '../store/chunked-read.js';

// The parallel reader's thread (store/parallel-read.ts starts it; the work is in
// store/chunked-read.ts). Built by scripts/build.mjs as dist/workers/parallel-read.js. Each post
// bumps a shared counter the caller may be waiting on (Atomics.wait: it stays synchronous).
const data = workerData as ParallelReadWorkerData;
const posted = new Int32Array(data.posted);
readChunks(data, (message) => {
  data.port.postMessage(message);
  Atomics.add(posted, 0, 1);
  Atomics.notify(posted, 0);
});
data.port.close();
