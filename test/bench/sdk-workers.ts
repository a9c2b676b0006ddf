/**
 * The parent side of sdk.worker.ts: fork SDK worker processes and spread the SDK connections of a
 * benchmark over them evenly. Workers are pushed into `into` before anything can fail, so the
 * caller's `finally` kills them even when connecting times out.
 */
import { forkWorker, type Worker } from './harness.ts';

export async function connectSdkWorkers(
  into: Worker[],
  url: string,
  sdks: number,
  kind: 'sdk' | 'naive',
  timeoutMs: number,
  processes = 2,
): Promise<void> {
  for (let w = 0; w < processes; w++) {
    const worker = forkWorker(new URL('./sdk.worker.ts', import.meta.url));
    into.push(worker);
    const count = Math.floor(sdks / processes) + (w < sdks % processes ? 1 : 0);
    worker.send({ type: 'connect', url, count, kind });
  }
  await Promise.all(into.map((w) => w.waitFor('connected', timeoutMs)));
}
