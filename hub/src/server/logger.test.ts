import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger, formatPretty } from './logger.ts';

function capture() {
  const lines: string[] = [];
  return { lines, out: { write: (text: string) => void lines.push(text) } };
}

test('JSON lines: level name, ISO time, the event fields, the message', () => {
  const { lines, out } = capture();
  const logger = createLogger({ out });
  logger.info({ evt: 'promote', app: 'shop', key: 'item:1', qps: 1200 }, 'key promoted');
  assert.is(lines.length, 1);
  assert.ok(lines[0]!.endsWith('\n'));
  const rec = JSON.parse(lines[0]!);
  assert.equal(
    { ...rec, time: undefined },
    { level: 'info', time: undefined, evt: 'promote', app: 'shop', key: 'item:1', qps: 1200, msg: 'key promoted' },
  );
  assert.match(rec.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('the level filters', () => {
  const { lines, out } = capture();
  const logger = createLogger({ out, level: 'warn' });
  logger.debug({ evt: 'a' });
  logger.info({ evt: 'b' });
  logger.warn({ evt: 'c' });
  logger.error({ evt: 'd', err: new Error('boom') });
  assert.equal(
    lines.map((l) => JSON.parse(l).evt),
    ['c', 'd'],
  );
  assert.is(JSON.parse(lines[1]!).err.message, 'boom', 'errors are serialised with their message and stack');
});

test('pretty: one human line per event, the event name first', () => {
  const { lines, out } = capture();
  createLogger({ out, pretty: true }).warn(
    { evt: 'refused', app: 'shop', close: 4003, reason: 'wrong token' },
    'connection refused',
  );
  assert.match(
    lines[0]!,
    /^\d\d:\d\d:\d\d\.\d{3} WARN {2}refused: connection refused app=shop close=4003 reason="wrong token"\n$/,
  );
  assert.is(formatPretty('not json'), 'not json\n');
});

test.run();
