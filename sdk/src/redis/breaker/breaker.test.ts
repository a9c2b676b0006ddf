/**
 * The core circuit breaker with a host of the test's own (no Redis: the adapters' fault tests
 * run it against frozen redis-servers): the `breaker` option's checks, what the adapter reports
 * (answers, failures, a command handed on), and a probe put off while the client is closing.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, HotKeyError } from '../../errors.ts';
import { BREAKER_DEFAULTS, Breakers, breakerSettings, type BreakerHost, type BreakerState } from './breaker.ts';
import { waitFor } from '../../../../test/support/wait.ts';

function fixture(host: Partial<BreakerHost> = {}, failures = 2, timeoutMs = BREAKER_DEFAULTS.timeoutMs) {
  const states: BreakerState[] = [];
  const pings: string[] = [];
  const breakers = new Breakers(
    { ...BREAKER_DEFAULTS, failures, coolDownMs: 1, timeoutMs },
    {
      ping: (node) => {
        pings.push(node);
        return Promise.resolve('PONG');
      },
      closing: () => false,
      isAnswer: (e) => e instanceof Error && e.message.startsWith('ERR'),
      ...host,
    },
    (_node, state) => states.push(state),
  );
  return { breakers, node: breakers.node('a:1'), states, pings };
}

test('breakerSettings: true, absent or {} are the defaults; false is none; a bad field is a TypeError naming it', () => {
  assert.equal(breakerSettings(undefined), BREAKER_DEFAULTS);
  assert.equal(breakerSettings(true), BREAKER_DEFAULTS);
  assert.equal(breakerSettings({ timeoutMs: 50 }), { ...BREAKER_DEFAULTS, timeoutMs: 50 });
  assert.is(breakerSettings(false), undefined);
  for (const [given, says] of [
    [{ failures: 0 }, 'breaker.failures'],
    [{ coolDownMs: -1 }, 'breaker.coolDownMs'],
    [{ timeoutMs: 2.5 }, 'breaker.timeoutMs'],
    [{ timeoutMs: '10' }, 'breaker.timeoutMs'],
    ['yes', 'breaker must be'],
    [null, 'breaker must be'],
    [[1], 'breaker must be'],
  ] as const) {
    assert.throws(
      () => breakerSettings(given),
      (e: Error) => e instanceof TypeError && e.message.includes(says),
      JSON.stringify(given),
    );
  }
});

test('failures in a row open it; an answer (an error reply too) resets the count; a command handed on is no verdict', async () => {
  const { breakers, node, states } = fixture();
  const a = {};
  const b = {};
  breakers.sent(node, a, 'get');
  breakers.failed(node, a);
  breakers.watch(node, 'get', Promise.reject(new Error('ERR wrong type')));
  await Promise.resolve();
  breakers.sent(node, b, 'get');
  breakers.passed(node, b);
  breakers.failed(node, b); // after it was handed on: counted where it went, not here
  breakers.failed(node, a); // settled already: not counted twice
  assert.is(node.state, 'closed');
  assert.is(node.failures, 1);
  assert.not.ok(breakers.sent(node, {}, 'blpop'), 'a blocking command is not watched');
  breakers.watch(node, 'get', Promise.reject(new Error('connection lost')));
  breakers.watch(node, 'get', Promise.reject(new Error('connection lost')));
  // coolDownMs 1 and a PING answered at once: open, half-open and closed again within a few ms
  await waitFor('opened, then closed by the probe', () => states.at(-1) === 'closed', 1000);
  assert.equal(states, ['open', 'half-open', 'closed']);
  assert.is(node.opened, 1);
  const err = breakers.reject(node);
  assert.instance(err, HotKeyError);
  assert.is(err.code, ErrorCode.BreakerOpen);
  assert.is(node.rejected, 1);
});

test('a probe due while the client is closing is put off: the next command for the node sends it', async () => {
  let closing = true;
  const { breakers, node, states, pings } = fixture({ closing: () => closing }, 1);
  breakers.watch(node, 'get', Promise.reject(new Error('connection lost')));
  await waitFor('open, its probe put off', () => node.probeDue, 1000);
  assert.equal(pings, [], 'no PING behind a close');
  assert.is(node.state, 'open');
  closing = false;
  breakers.reject(node); // a command for the node: refused, and the probe goes now
  assert.equal(pings, ['a:1']);
  await waitFor('closed by the probe', () => states.at(-1) === 'closed', 1000);
  assert.equal(states, ['open', 'half-open', 'closed']);
});

/** The event loop does not run for `ms` (a busy CPU, a long GC, a synchronous stretch). */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    /* no turn of the event loop */
  }
}

test('a stalled event loop is not Redis being slow: commands answered soon after it wakes are not timeouts', async () => {
  const { breakers, node } = fixture({}, 1, 100);
  const commands = [{}, {}, {}];
  for (const c of commands) breakers.sent(node, c, 'get');
  stall(400); // 4× timeoutMs of wall time during which Redis's replies could not be read
  // the replies are read a few sweeps after the process wakes, well within timeoutMs of running time
  await new Promise((resolve) => setTimeout(resolve, 40));
  for (const c of commands) breakers.settled(node, c);
  assert.is(node.failures, 0);
  assert.is(node.state, 'closed');
});

test('a stall does not hide a node that never answers: timed out after timeoutMs of running time', async () => {
  const { breakers, node } = fixture({ ping: () => new Promise(() => {}) }, 1, 100);
  breakers.sent(node, {}, 'get');
  stall(400);
  await waitFor('the unanswered command counted', () => node.failures === 1, 2000);
  assert.is(node.opened, 1);
});

test('one command sent to two nodes (a redirect) is in flight on each until each answers; answered, it times out nowhere', async () => {
  const { breakers, node } = fixture({}, 1, 50);
  const other = breakers.node('b:2');
  const command = {};
  breakers.sent(node, command, 'get');
  breakers.sent(node, command, 'get'); // sent again on one node (a replayed offline queue): one entry
  breakers.sent(other, command, 'get');
  assert.ok(breakers.watching(node, command) && breakers.watching(other, command));
  breakers.settled(node, command);
  assert.not.ok(breakers.watching(node, command));
  assert.ok(breakers.watching(other, command), 'still in flight on the node it went to next');
  breakers.settled(other, command);
  assert.not.ok(breakers.watching(other, command));
  await new Promise((resolve) => setTimeout(resolve, 250)); // past timeoutMs and several sweeps
  assert.is(node.failures + other.failures, 0);
  assert.is(node.inflight.size + other.inflight.size, 0);
});

test.run();
