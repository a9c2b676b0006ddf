/**
 * A server under test in its own process: the real hub, the decode-only sink, the naive hub or
 * the bare ws echo server (ws-echo.ts).
 * The parent reads its CPU time and heap over IPC, so that one process's figures are not mixed
 * with the load generators'.
 *
 *   argv[2]: 'hub' | 'sink' | 'naive' | 'echo'; argv[3]: JSON options (rules threshold etc.)
 *   -> { type: 'ready', url, pid }
 *   <- { type: 'stats' }  -> { type: 'stats', cpuMs, heapUsed, rss, records }
 *   <- { type: 'gc' }     -> { type: 'gc', heapUsed }   (needs --expose-gc)
 */
import { toParent } from './harness.ts';
import type { ServerOptions } from './server-process.ts';
import { startSink } from './sink.ts';
import { startNaiveHub } from './baseline/naive-hub.ts';
import { startWsEcho } from './ws-echo.ts';

const kind = process.argv[2];
const opts = JSON.parse(process.argv[3] ?? '{}') as ServerOptions;

let url: string;
let records: () => number = () => NaN;
if (kind === 'sink') {
  const sink = await startSink();
  url = sink.url;
  records = sink.records;
} else if (kind === 'echo') {
  url = (await startWsEcho()).url;
} else if (kind === 'naive') {
  const hub = await startNaiveHub({ threshold: opts.threshold ?? 1000 });
  url = hub.url;
  records = () => hub.stats().records;
} else if (kind === 'hub') {
  // imported only here: the sink and the naive hub run even while the hub does not build
  const { startHubUnderTest } = await import('./hub-under-test.ts');
  const hub = await startHubUnderTest(opts);
  url = hub.url;
} else {
  throw new TypeError(`unknown server kind ${kind}`);
}
toParent({ type: 'ready', url, pid: process.pid });

const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (raw) => {
  const message = raw as { type: string };
  if (message.type === 'gc') {
    gc?.();
    gc?.();
    toParent({ type: 'gc', heapUsed: process.memoryUsage().heapUsed });
  } else if (message.type === 'exit') {
    // a normal exit, so that --cpu-prof writes its profile (SIGKILL would lose it)
    process.exit(0);
  } else if (message.type === 'stats') {
    const cpu = process.cpuUsage();
    const mem = process.memoryUsage();
    toParent({
      type: 'stats',
      cpuMs: (cpu.user + cpu.system) / 1000,
      userMs: cpu.user / 1000,
      systemMs: cpu.system / 1000,
      heapUsed: mem.heapUsed,
      rss: mem.rss,
      records: records(),
    });
  }
});
// the IPC channel is this process's lifeline
process.on('disconnect', () => process.exit(0));
