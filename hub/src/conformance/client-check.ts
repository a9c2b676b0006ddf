/**
 * The client check: plays a hub on a local port and judges the client that connects by the rules
 * of sdk/src/wire/PROTOCOL.md (C1–C8). Three connections of the client, in order:
 *
 *   1. Hello → Welcome + Snapshot; leases granted (C3); Promote seq 1, Invalidate seq 2 (C4:
 *      Applied), Demote seq 4 — a gap (C5: Resync, answered); then a frame that breaks the
 *      protocol (C6: the client closes and comes back);
 *   2. Hello → Welcome + Snapshot, then close 4008, a slow consumer (C7: it comes back);
 *   3. Hello → Error HK_ERR_AUTH + close 4003 (C8: it must not come back).
 *
 * Every frame the client sends is checked as it arrives (C2).
 */
import {
  DEFAULT_LEASE_MS,
  decodeClientMessage,
  MsgType,
  PROTOCOL_VERSION,
  type Hello,
  type ServerMessage,
} from '@hotkey/sdk/protocol';
import { hexToBytes, storedVectors } from '@hotkey/sdk/vectors';
import { CLIENT_RULES, Results } from './rules.ts';
import { type Link, Listener, pause, type Frame } from './socket.ts';

export interface ClientCheckOptions {
  /** @default '127.0.0.1' */
  host?: string;
  /** 0: any free port @default 0 */
  port?: number;
  /** the lease the kit grants @default 2000 (DEFAULT_LEASE_MS) */
  leaseMs?: number;
  /** how long to wait for the client's first connection @default 30000 */
  waitMs?: number;
  /** how long one step may take @default 3000 */
  timeoutMs?: number;
}

export interface ClientCheck {
  /** where the client under test connects: ws://host:port/ws */
  readonly url: string;
  /** the results, once the scenario ran (or the client never came) */
  readonly done: Promise<Results>;
  /** stops listening (the scenario ends early) */
  close(): Promise<void>;
}

/** a client reconnects with backoff: the reference SDK waits at most 5 s */
const RECONNECT_MS = 6000;
/** how long a client refused with 4003 is watched for a reconnect */
const FATAL_WATCH_MS = 2000;
const HUB_ID = 'conformance-hub';
const KEY = 'conformance:key';

const is =
  (t: number) =>
  (f: Frame): boolean =>
    f.message?.t === t;

export async function startClientCheck(options: ClientCheckOptions = {}): Promise<ClientCheck> {
  const listener = await Listener.listen(options.host ?? '127.0.0.1', options.port ?? 0, decodeClientMessage);
  const done = scenario(listener, {
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    waitMs: options.waitMs ?? 30_000,
    timeoutMs: options.timeoutMs ?? 3000,
  }).finally(() => listener.close());
  return { url: listener.url, done, close: () => listener.close() };
}

interface Timing {
  leaseMs: number;
  waitMs: number;
  timeoutMs: number;
}

async function scenario(listener: Listener, o: Timing): Promise<Results> {
  const r = new Results(CLIENT_RULES);
  const first = await listener.nextLink(o.waitMs);
  if (first === undefined) {
    r.fail('C1', `no client connected within ${o.waitMs} ms`);
    return r;
  }
  // ---- connection 1 ----
  const c1 = await handshake(r, first, o, 'connection 1');
  if (c1 !== undefined) {
    await leasesAndBroadcasts(r, c1, o);
    const bad = storedVectors().vectors.find((v) => v.direction === 'to-client' && v.error !== undefined)!;
    c1.sendBytes(hexToBytes(bad.hex));
    const closed = await c1.waitClosed(o.timeoutMs);
    r.check('C6', closed !== undefined, `still open ${o.timeoutMs} ms after the frame of vector "${bad.name}"`);
    if (closed === undefined) c1.terminate();
  }
  // ---- connection 2: after a protocol fault, and then a slow-consumer close ----
  const second = await listener.nextLink(RECONNECT_MS + o.timeoutMs);
  if (!r.check('C6', second !== undefined, `no reconnect within ${RECONNECT_MS + o.timeoutMs} ms after the bad frame`))
    return r;
  const c2 = await handshake(r, second!, o, 'connection 2');
  if (c2 === undefined) return r;
  r.pass('C6');
  c2.close(4008, 'slow consumer: send buffer full, reconnect and resync');
  // ---- connection 3: refused for good ----
  const third = await listener.nextLink(RECONNECT_MS + o.timeoutMs);
  if (!r.check('C7', third !== undefined, `no reconnect within ${RECONNECT_MS + o.timeoutMs} ms after close 4008`))
    return r;
  const hello = await third!.next(() => true, o.timeoutMs);
  if (!r.check('C7', hello?.message?.t === MsgType.Hello, 'the reconnect after close 4008 sent no Hello')) return r;
  third!.send({ t: MsgType.Error, code: 'HK_ERR_AUTH', message: 'conformance: refused for good (close 4003)' });
  third!.close(4003, 'auth');
  const fourth = await listener.nextLink(FATAL_WATCH_MS);
  r.check('C8', fourth === undefined, `the client connected again after close 4003`);
  fourth?.terminate();
  return r;
}

/** The Hello (C1, C2), then Welcome + Snapshot; every later frame checked (C2). */
async function handshake(r: Results, link: Link, o: Timing, what: string): Promise<Link | undefined> {
  const first = await link.next(() => true, o.timeoutMs);
  if (first === undefined) {
    r.fail('C1', `${what}: no frame within ${o.timeoutMs} ms of the socket opening`);
    link.terminate();
    return undefined;
  }
  if (!r.check('C1', first.binary, `${what}: the first frame is a text frame`)) return undefined;
  if (!r.check('C2', first.message !== undefined, `${what}: the first frame is refused: ${first.error}`))
    return undefined;
  if (
    !r.check(
      'C1',
      first.message!.t === MsgType.Hello,
      `${what}: the first frame is type ${first.message!.t}, not Hello`,
    )
  )
    return undefined;
  const hello = first.message as Hello;
  r.check('C1', hello.v === PROTOCOL_VERSION, `${what}: Hello v ${hello.v}, not ${PROTOCOL_VERSION}`);
  // nothing else before the Welcome
  await pause(100);
  r.check('C1', link.frames.length === 1, `${what}: ${link.frames.length - 1} frame(s) before the Welcome`);
  const send = (m: ServerMessage) => link.send(m);
  link.onFrame = (frame) => {
    r.check('C2', frame.message !== undefined, `${what}: a frame is refused: ${frame.error}`);
    if (frame.message?.t === MsgType.Lease) send({ t: MsgType.Grant, id: frame.message.id, ms: o.leaseMs });
  };
  for (const frame of link.frames.slice(1)) link.onFrame(frame);
  send({
    t: MsgType.Welcome,
    v: PROTOCOL_VERSION,
    hub: HUB_ID,
    epoch: 1,
    members: [{ id: HUB_ID, url: '' }],
    rules: [],
    local: [],
    instances: 1,
    seq: 0,
  });
  send({ t: MsgType.Snapshot, seq: 0, hot: [] });
  return link;
}

/** C3, C4, C5 on connection 1. */
async function leasesAndBroadcasts(r: Results, link: Link, o: Timing): Promise<void> {
  const firstLease = await link.next(is(MsgType.Lease), o.timeoutMs);
  r.check('C3', firstLease !== undefined, `no Lease within ${o.timeoutMs} ms of the Welcome`);
  const grantedAt = performance.now();

  link.send({
    t: MsgType.Promote,
    seq: 1,
    key: KEY,
    qps: 1000,
    hotMs: 60_000,
    cacheTtlMs: 5000,
    cache: true,
    at: Date.now(),
  });
  const fromInvalidate = link.mark();
  link.send({ t: MsgType.Invalidate, seq: 2, key: KEY });
  const applied = await link.next(
    (f) => f.message?.t === MsgType.Applied && f.message.seq >= 2,
    o.timeoutMs,
    fromInvalidate,
  );
  r.check('C4', applied !== undefined, `no Applied {seq >= 2} within ${o.timeoutMs} ms of Invalidate seq 2`);

  const fromGap = link.mark();
  link.send({ t: MsgType.Demote, seq: 4, key: `${KEY}:other` }); // seq 3 never sent
  const resync = await link.next(is(MsgType.Resync), o.timeoutMs, fromGap);
  r.check('C5', resync !== undefined, `no Resync within ${o.timeoutMs} ms of Demote seq 4 after seq 2 (a gap)`);
  link.send({ t: MsgType.Snapshot, seq: 4, hot: [] });

  if (firstLease !== undefined) {
    // a renewal must come before the first lease lapses
    const renewal = await link.next(
      is(MsgType.Lease),
      Math.max(0, grantedAt + o.leaseMs - performance.now()),
      link.frames.indexOf(firstLease) + 1,
    );
    r.check('C3', renewal !== undefined, `no Lease renewal within the ${o.leaseMs} ms lease granted`);
  }
}
