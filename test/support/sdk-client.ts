/**
 * One HotKeyClient against a ProtocolPeer (a scripted hub) on an injected clock, with one catch-all
 * rule and its keys promoted: the setup of the SDK's load, refresh and push unit tests.
 */
import { RULE_DEFAULTS, type Rule } from '../../sdk/src/rules.ts';
import { MsgType } from '../../sdk/src/wire/protocol.ts';
import { HotKeyClient, type ClientOptions, type ClientStatus } from '../../sdk/src/client/client.ts';
import { ProtocolPeer, type PeerSocket } from './protocol-peer.ts';
import { waitFor } from './wait.ts';

/** cacheTtlMs 1000: refresh point 720..800 (ratio 0.8, jitter up to 10 %), stale until 1000 + staleIfErrorMs */
export const P = { qps: 5000, hotMs: 600_000, cacheTtlMs: 1000, cache: true, at: 0 };

export interface Setup {
  hk: HotKeyClient;
  peer: ProtocolPeer;
  sock: PeerSocket;
  clock: { t: number };
  statuses: ClientStatus[];
  seq: number;
}

const open: { hk: HotKeyClient; peer: ProtocolPeer }[] = [];
/** Has closeAll() close a client and peer a test made itself. */
export function closeLater(hk: HotKeyClient, ...peers: ProtocolPeer[]): void {
  for (const peer of peers) open.push({ hk, peer });
}
/** Closes every client and peer `setup` opened (a failed assertion skips a test's own teardown). */
export async function closeAll(): Promise<void> {
  for (const { hk, peer } of open.splice(0)) {
    await hk.close();
    await peer.close();
  }
}

/** A client connected to a fresh scripted hub, its first lease granted (unless the peer grants none). */
export interface Connected {
  hk: HotKeyClient;
  peer: ProtocolPeer;
  sock: PeerSocket;
  clock: { t: number };
}

export type PeerOptions = Partial<ConstructorParameters<typeof ProtocolPeer>[0]>;

/** One HotKeyClient (app `shop`, instance `i-1`, injected clock) welcomed by a ProtocolPeer; closed by closeAll(). */
export async function connect(opts: Partial<ClientOptions> = {}, peerOpts: PeerOptions = {}): Promise<Connected> {
  const peer = await new ProtocolPeer({
    id: 'hub-a',
    rules: [{ ...RULE_DEFAULTS, match: '*', threshold: 100 }],
    local: [10],
    ...peerOpts,
  }).listen();
  const clock = { t: 0 };
  const socketP = peer.nextSocket();
  const hk = new HotKeyClient({
    app: 'shop',
    hubs: [peer.url],
    instanceId: 'i-1',
    flushIntervalMs: 10,
    now: () => clock.t,
    ...opts,
  });
  open.push({ hk, peer });
  const sock = await socketP;
  await hk.ready({ signal: AbortSignal.timeout(3000) });
  // the Grant goes out before anything the test sends next on this socket
  if (peerOpts.leaseMs !== false) await waitFor('the first lease granted', () => sock.grants >= 1);
  return { hk, peer, sock, clock };
}

/** `connect` with one catch-all rule (`rule` over RULE_DEFAULTS) and `keys` promoted. */
export async function setup(opts: Partial<ClientOptions> = {}, rule: Partial<Rule> = {}, keys = ['k']): Promise<Setup> {
  const c = await connect(opts, { rules: [{ ...RULE_DEFAULTS, match: '*', threshold: 100, ...rule }] });
  const { hk, sock } = c;
  const statuses: ClientStatus[] = [];
  void (async () => {
    for await (const s of hk.status()) statuses.push(s);
  })();
  let seq = 0;
  for (const key of keys) sock.send({ t: MsgType.Promote, seq: ++seq, key, ...P });
  await waitFor('keys hot', () => keys.every((k) => hk.isHot(k)));
  return { ...c, statuses, seq };
}

/** Moves the injected clock; the client reads it on the next task's first get(). */
export async function at(s: Setup, t: number): Promise<void> {
  s.clock.t = t;
  await new Promise((r) => setImmediate(r));
}

export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Whether `p` is settled after the microtasks queued so far ran (a reader that did not wait). */
export async function settledNow<T>(p: Promise<T>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}
