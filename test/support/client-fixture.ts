/**
 * The setup the HotKeyClient unit tests share (sdk/src/client/client*.test.ts): a client with a
 * token, welcomed by a scripted hub (sdk-client.ts `connect`), and the fields of a Promote that
 * keeps its key hot and cached for the whole of a test.
 */
import type { ClientOptions } from '../../sdk/src/client/client.ts';
import { MsgType } from '../../sdk/src/wire/protocol.ts';
import { connect, type Connected, type PeerOptions } from './sdk-client.ts';
import { waitFor } from './wait.ts';

/** Promote fields: hot for a minute, values cached for 10 s (on the injected clock) */
export const P = { qps: 5000, hotMs: 60_000, cacheTtlMs: 10_000, cache: true, at: 0 };

export type Setup = Connected;

/** A client with token `s3cret` welcomed by a scripted hub; closed by sdk-client.ts `closeAll`. */
export const setup = (opts: Partial<ClientOptions> = {}, peerOpts: PeerOptions = {}): Promise<Setup> =>
  connect({ token: 's3cret', ...opts }, peerOpts);

export async function teardown(s: Setup): Promise<void> {
  await s.hk.close();
  await s.peer.close();
}

/** Promotes `key` (broadcast seq 1, the P fields) from the test's hub and waits until the client holds it hot. */
export async function promoted(s: Setup, key = 'k'): Promise<void> {
  s.sock.send({ t: MsgType.Promote, seq: 1, key, ...P });
  await waitFor(`hk.isHot(${key})`, () => s.hk.isHot(key));
}
