/**
 * Slowloris (R. Hansen, 2009). A hub with 1024 file descriptors faces 1500 connections that
 * each send half a request and never finish it, reopening whenever the hub lets one go. Left to
 * Node's own timeouts (headersTimeout 60 s, checked every 30 s) they would take every descriptor
 * and new SDKs and /healthz would wait for minutes; connections without a complete request are
 * capped (the oldest goes first) below the descriptor limit, so a new SDK's ready() and /healthz
 * still answer.
 * Figures: `# figures slowloris …`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, type Socket } from 'node:net';
import { printFigures, Probe, readyMs } from '../support/attack.ts';
import { HubProcess } from '../support/hub-process.ts';
import { delay } from '../support/wait.ts';

const FD_LIMIT = 1024;
const ATTACKERS = 3000;
/** a dropped slow client comes back after this: the attack keeps its size, at a churn the box can carry */
const RECONNECT_MS = 3000;
const ATTACK_MS = 7000;
const READY_DEADLINE_MS = 8000;

let hub: HubProcess;

test.before(async () => {
  hub = await HubProcess.start({ fdLimit: FD_LIMIT });
});

test.after(async () => {
  await hub?.stop('SIGKILL');
});

/** One slow client: half a request, then nothing; a new one RECONNECT_MS after the hub drops it. */
async function slowClient(until: number, stats: { opened: number }, open: Set<Socket>): Promise<void> {
  while (performance.now() < until) {
    const socket = connect({ host: '127.0.0.1', port: hub.port });
    open.add(socket);
    socket.on('error', () => {});
    socket.on('connect', () => {
      stats.opened++;
      socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${hub.port}\r\nX-Slow: `);
    });
    await Promise.race([
      new Promise((resolve) => socket.once('close', resolve)),
      delay(Math.max(0, until - performance.now())),
    ]);
    open.delete(socket);
    socket.destroy();
    await delay(RECONNECT_MS);
  }
}

test('thousands of half-sent requests leave room for a new SDK and /healthz', async () => {
  const quietReady = await readyMs(hub.url, 'shop');
  const probe = new Probe(hub.httpUrl, hub.child.pid!);
  const stats = { opened: 0 };
  const open = new Set<Socket>();
  const until = performance.now() + ATTACK_MS;
  const attack = Promise.all(Array.from({ length: ATTACKERS }, () => slowClient(until, stats, open)));
  await delay(2500);
  const heldAtPeak = open.size;
  const readies: number[] = [];
  for (let i = 0; i < 3; i++) readies.push(await readyMs(hub.url, 'shop', READY_DEADLINE_MS));
  await attack;
  const figures = {
    ...(await probe.stop()),
    quietReadyMs: quietReady,
    attackReadyMs: readies,
    slowConnections: stats.opened,
    heldByAttacker: heldAtPeak,
  };
  printFigures('slowloris', figures);

  assert.ok(
    readies.every((ms) => ms < READY_DEADLINE_MS),
    `a new SDK got in during the attack: ${readies.join(', ')} ms`,
  );
  // the opening burst of 3000 connects can cost a probe its fresh connection (closed as the oldest
  // past twice the cap); a monitor retries, and every other probe answered
  assert.ok(
    figures.healthzFailures <= 2,
    `/healthz failed ${figures.healthzFailures} of ${figures.healthzSamples} times`,
  );
  assert.is(hub.child.exitCode, null, 'the hub is still running');
});

test.run();
