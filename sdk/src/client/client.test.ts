/**
 * HotKeyClient and its hubs: the hello, refusals, liveness, network faults, misuse.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient, type ClientStatus } from './client.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { CloseCode, MAX_KEY_LENGTH, PROTOCOL_VERSION } from '../wire/protocol.ts';
import { ProtocolPeer } from '../../../test/support/protocol-peer.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { closeAll } from '../../../test/support/sdk-client.ts';
import { setup, teardown } from '../../../test/support/client-fixture.ts';

// A failed assertion skips a test's own teardown: close whatever it left open.
test.after.each(closeAll);

test('hello carries version, app, token, instance; ready resolves on welcome', async () => {
  const s = await setup();
  assert.is(s.sock.hello.v, PROTOCOL_VERSION);
  assert.is(s.sock.hello.app, 'shop');
  assert.is(s.sock.hello.token, 's3cret');
  assert.is(s.sock.hello.instance, 'i-1');
  assert.is(s.sock.hello.role, 'sdk');
  assert.equal(s.hk.hubs(), ['hub-a']);
  assert.is(s.hk.rules()[0]!.threshold, 100);
  await teardown(s);
});

test('fatal close codes reject ready() and stop retrying', async () => {
  for (const [code, errorCode] of [
    [CloseCode.Auth, ErrorCode.Auth],
    [CloseCode.UnknownApp, ErrorCode.UnknownApp],
    [CloseCode.Version, ErrorCode.Version],
  ] as const) {
    const peer = await new ProtocolPeer({ id: 'hub-x', refuse: { code, errorCode } }).listen();
    const hk = new HotKeyClient({ app: 'shop', hubs: peer.url, reconnectMinMs: 1, reconnectMaxMs: 2 });
    const statuses = hk.status();
    const err = await hk.ready({ signal: AbortSignal.timeout(3000) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.instance(err, HotKeyError);
    assert.is((err as HotKeyError).code, errorCode);
    const seen: ClientStatus['type'][] = [];
    for (;;) {
      const { value } = await statuses.next();
      if (!value) break;
      seen.push(value.type);
      if (value.type === 'error') break;
    }
    assert.equal(seen, ['error'], 'no reconnect after a fatal code');
    await hk.close();
    assert.is(peer.sockets.length, 1);
    await peer.close();
  }
});

test('a dead hub is noticed within the liveness timeout', async () => {
  const s = await setup({ pingIntervalMs: 50, livenessTimeoutMs: 150, reconnectMinMs: 5000, reconnectMaxMs: 5000 });
  const started = performance.now();
  (s.sock.ws as unknown as { _socket: { pause(): void } })._socket.pause(); // no more pongs
  await waitFor('disconnect', () => s.hk.hubs().length === 0, 2000);
  assert.ok(performance.now() - started < 1000);
  await teardown(s);
});

test('network faults never throw without an error listener; status reports them', async () => {
  const hk = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1', reconnectMinMs: 1, reconnectMaxMs: 5 });
  const st = hk.status();
  const seen = new Set<string>();
  for (;;) {
    const { value } = await st.next();
    if (!value) break;
    seen.add(value.type);
    if (seen.has('error') && seen.has('reconnecting')) break;
  }
  await hk.close();
  assert.ok(seen.has('error'));
  const ended = await st.next();
  assert.ok(ended.done || ended.value?.type === 'closed');
});

test('misuse throws TypeError at once', () => {
  const t = (fn: () => unknown) => assert.throws(fn, (e: unknown) => e instanceof TypeError);
  t(() => new HotKeyClient({ app: '', hubs: ['ws://127.0.0.1:1'] }));
  t(() => new HotKeyClient({ app: 'a', hubs: [] }));
  t(() => new HotKeyClient({ app: 'a', hubs: ['http://x'] }));
  t(() => new HotKeyClient({ app: 'a', hubs: 'ws://127.0.0.1:1', flushIntervalMs: 0 }));
  const hk = new HotKeyClient({ app: 'a', hubs: 'ws://127.0.0.1:1' });
  t(() => hk.get(42 as unknown as string, () => 1));
  t(() => hk.get('x'.repeat(MAX_KEY_LENGTH + 1), () => 1));
  t(() => hk.get('', () => 1));
  t(() => hk.get('k', 'nope' as unknown as () => 1));
  t(() => hk.track(null as unknown as string));
  t(() => hk.invalidate({} as unknown as string));
  void hk.close();
});

test.run();
